//! Writing a merged delta's text into its payload's text where its string is, without a
//! tree: the one splice Kilo's and BreadBoard's delta memos ([`crate::kilo::DeltaMemo`],
//! [`crate::breadboard::TextMemo`]) share. Each memo says where its strings are ([`Places`]);
//! the splice builds the new text around one of them and moves the places after it.

use std::any::Any;
use std::ops::Range;

use bb_payload::Payload;

/// A memo that knows where some of its payload's strings are in the payload's text
/// (between their quotes).
pub(crate) trait Places: Any + Clone + Send + Sync {
    /// Where the string of `field` is, when this memo knows it.
    fn place(&self, field: &str) -> Option<Range<usize>>;

    /// Every place this memo holds, to be moved when the text before them changes length.
    fn places_mut(&mut self) -> impl Iterator<Item = &mut Range<usize>>;
}

/// Writes `merged` (the merged deltas' text, in order) into `payload`, the last merged
/// delta's, as its `field` string, in its text where its memo `M` says the string is: no
/// tree and no second scan, and the payload keeps its memo (taken over, or copied when a
/// clone of the payload shares it) with its places moved by the change of the string's
/// length.
///
/// Only when every merged delta's memo knew where its string was (the caller checks the
/// others'), that is when none is written with an escape: then none holds a quote, a
/// backslash or a control character, nor does `merged`, their concatenation, which
/// serde_json writes as it is, and the text stays valid JSON written as its tree would be.
/// Else `false`: nothing was written (the caller writes `merged` another way).
pub(crate) fn splice<M: Places>(payload: &mut Payload, field: &str, merged: &str) -> bool {
    let (Some(at), Some(text)) = (payload.memo::<M>().and_then(|m| m.place(field)), payload.text())
    else {
        return false;
    };
    let mut spliced = String::with_capacity(text.len() - at.len() + merged.len());
    spliced.push_str(&text[..at.start]);
    spliced.push_str(merged);
    spliced.push_str(&text[at.end..]);
    let Some(mut memo) = payload.take_memo::<M>().or_else(|| payload.memo().cloned()) else {
        return false;
    };
    // Two strings of one text are never at one place: the one equal to `at` is the string
    // written (checked first: an empty one starts where it ends, as the places after it do).
    for place in memo.places_mut() {
        if *place == at {
            *place = at.start..at.start + merged.len();
        } else if place.start >= at.end {
            *place = place.start - at.len() + merged.len()..place.end - at.len() + merged.len();
        }
    }
    // Valid JSON by construction (above): the delta's text with one string's text replaced
    // by text of the same kind.
    *payload = Payload::from_text_unchecked(spliced);
    payload.set_memo(memo);
    true
}
