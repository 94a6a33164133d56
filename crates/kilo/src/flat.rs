//! The common Kilo event body read by hand: a compact object whose values are all strings (a
//! `message.part.delta`'s, most of a busy stream), read into [`Facts`] in one pass over its
//! bytes instead of serde's walk; a delta's body in the layout Kilo writes it is read with its
//! keys compared in place, not scanned. Any other body is left to the typed read, which reads
//! such a body the same way.

use std::borrow::Cow;

use bb_payload::LooseStr;

use crate::facts::Facts;

/// `text` read into `facts` (as [`Facts::default`] when called) as the typed read of
/// [`Facts`] reads it, when it is a compact object (no whitespace) whose values are
/// strings, none with a `\u` escape, no key escaped, no key the flat read cannot fill
/// (`status`, `part`, `info`, `time`, `turn`) and no key it keeps twice (the typed read
/// refuses that): `true`. `false` for any other text, `facts` then partly written: the
/// caller reads it with serde. Strings without escapes are borrowed from `text`, as serde
/// borrows them. `facts` is the caller's, written in place: a `Facts` is most of a
/// kilobyte, and returning one would copy it.
pub(crate) fn read_into<'a>(text: &'a str, facts: &mut Facts<'a>) -> bool {
    read(text, facts).is_some()
}

/// [`read_into`], `None` where it is `false`.
fn read<'a>(text: &'a str, facts: &mut Facts<'a>) -> Option<()> {
    if let Some(delta) = delta(text) {
        let [session_id, message_id, part_id, field, delta] = delta;
        (facts.session_id, facts.message_id, facts.part_id) = (session_id, message_id, part_id);
        (facts.field, facts.delta) = (field, delta);
        return Some(());
    }
    let bytes = text.as_bytes();
    if bytes.first() != Some(&b'{') {
        return None;
    }
    if bytes.get(1) == Some(&b'}') {
        return (bytes.len() == 2).then_some(());
    }
    let mut at = 1;
    loop {
        let key = string(bytes, at)?;
        if key.escaped || bytes.get(key.end) != Some(&b':') {
            return None;
        }
        let value = string(bytes, key.end + 1)?;
        let slot = match &bytes[key.start..key.end - 1] {
            b"sessionID" => Some(&mut facts.session_id),
            b"requestID" => Some(&mut facts.request_id),
            b"messageID" => Some(&mut facts.message_id),
            b"partID" => Some(&mut facts.part_id),
            b"field" => Some(&mut facts.field),
            b"delta" => Some(&mut facts.delta),
            b"status" | b"part" | b"info" | b"time" | b"turn" => return None,
            _ => None,
        };
        if let Some(slot) = slot {
            if slot.0.is_some() {
                return None;
            }
            *slot = value.read(text);
        }
        match bytes.get(value.end) {
            Some(b',') => at = value.end + 1,
            Some(b'}') if value.end + 1 == bytes.len() => return Some(()),
            _ => return None,
        }
    }
}

/// The strings of a delta's body written in Kilo's layout (compact, its keys `sessionID`,
/// `messageID`, `partID`, `field`, `delta` in this order, plain string values, nothing after
/// the last): `None` for any other text (the general read then reads it). Its keys are
/// compared where the layout puts them, its values found as [`read`] finds them: the same
/// fields as that read, without a key scanned or looked up.
fn delta(text: &str) -> Option<[LooseStr<'_>; 5]> {
    let (session_id, at) = field(text, 0, b"{\"sessionID\":")?;
    let (message_id, at) = field(text, at, b",\"messageID\":")?;
    let (part_id, at) = field(text, at, b",\"partID\":")?;
    let (field_name, at) = field(text, at, b",\"field\":")?;
    let (delta, at) = field(text, at, b",\"delta\":")?;
    (at + 1 == text.len() && text.as_bytes()[at] == b'}')
        .then_some([session_id, message_id, part_id, field_name, delta])
}

/// The string value that follows `key` (with what precedes it) at `at` in `text`, and where
/// it ends; `None` when `key` is not there or no string [`string`] takes follows it.
#[inline(always)]
fn field<'a, const N: usize>(
    text: &'a str,
    at: usize,
    key: &[u8; N],
) -> Option<(LooseStr<'a>, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(at..).and_then(<[u8]>::first_chunk::<N>) != Some(key) {
        return None;
    }
    let span = string(bytes, at + N)?;
    Some((span.read(text), span.end))
}

/// A JSON string in the text: its contents start at `start`, its closing quote is at
/// `end - 1`.
struct Span {
    start: usize,
    end: usize,
    /// It holds an escape (none of them `\u`).
    escaped: bool,
}

impl Span {
    /// Its value, borrowed from `text` when it has no escape.
    #[inline(always)]
    fn read<'a>(&self, text: &'a str) -> LooseStr<'a> {
        let raw = &text[self.start..self.end - 1];
        LooseStr(Some(if self.escaped { Cow::Owned(unescape(raw)) } else { Cow::Borrowed(raw) }))
    }
}

/// The string that opens at `bytes[at]`; `None` when none does, or it holds a `\u` escape,
/// an escape JSON does not know or a control character (the typed read decides those). Its
/// plain runs are found with `bb_payload::string_stop`, sixteen bytes a step.
#[inline(always)]
fn string(bytes: &[u8], at: usize) -> Option<Span> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut escaped = false;
    let mut i = at + 1;
    loop {
        i = bb_payload::string_stop(bytes, i)?;
        match bytes[i] {
            b'"' => return Some(Span { start: at + 1, end: i + 1, escaped }),
            b'\\' => match bytes.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                    escaped = true;
                    i += 2;
                }
                _ => return None,
            },
            _ => return None,
        }
    }
}

/// The value of a string's contents `raw`, whose escapes [`string`] checked.
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        out.push(match rest.as_bytes()[i + 1] {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            other => char::from(other),
        });
        rest = &rest[i + 2..];
    }
    out.push_str(rest);
    out
}
