//! An engine event's body as the engine sent it: the JSON text, read typed and borrowed by
//! the few fields the bridge needs, and written out again untouched. Its `serde_json::Value`
//! tree is built only when something reads the body whole (or changes it). No IO.
//!
//! Building and freeing order-preserving trees was most of the event path's time (every
//! routed Kilo event, then once more to write it); a [`Payload`] received as text costs one
//! copy of its bytes, a scan per typed read ([`Payload::read`]) and a copy when written.
//!
//! Reads are lenient the way lookups in a tree are: a field of another shape than asked
//! for ([`LooseStr`], [`LooseObj`], …) reads as absent rather than failing the read, so a
//! typed read finds exactly what `value.get(..).and_then(Value::as_str)` would.

mod canon;
mod event_id;
mod loose;

use std::any::Any;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub use canon::{Canonical, Field, canonical, canonical_fields, string_stop};
pub use event_id::EventId;
pub use loose::{
    LooseBool, LooseF64, LooseI64, LooseObj, LooseStr, LooseStrOrNum, LooseStrOrObj, LooseU64,
    LooseVec, Present,
};

/// A JSON value held as text until something needs its tree.
///
/// Reading it as a [`Value`] (through `Deref`) builds the tree once and keeps it beside the
/// text; changing it (`DerefMut`) drops the text, and it is written from the tree from then
/// on. Equality compares the JSON values.
#[derive(Clone)]
pub struct Payload(Repr, Option<Memo>);

/// What a reader already read of a payload, kept for the next reader ([`Payload::memo`]).
type Memo = Arc<dyn Any + Send + Sync>;

#[derive(Clone)]
enum Repr {
    /// As received; the tree once something read it whole.
    Text { text: Box<RawValue>, tree: OnceLock<Value> },
    /// Built by the bridge, or changed since it was received.
    Tree(Value),
}

impl Payload {
    /// A payload of `text` (valid JSON by construction).
    pub fn from_text(text: Box<RawValue>) -> Self {
        Self(Repr::Text { text, tree: OnceLock::new() }, None)
    }

    /// A payload of `text` that is **not validated here**: for a reader that validates it
    /// with its own first read (a typed read with `serde_json` checks every byte it passes),
    /// so that the text is read once instead of twice. Until that read has passed, nothing
    /// else may read the payload whole or write it: text that is not JSON reads as `null`
    /// and would be written as it is.
    pub fn from_text_unchecked(text: String) -> Self {
        Self::from_text(raw_unchecked(text))
    }

    /// A payload of `text` (JSON) that is written exactly as its tree would be: `text` itself
    /// when serde_json writes its value so, else that writing when only whitespace, string
    /// escapes or number forms differ ([`canonical`]). `None` when that is not decided here
    /// ([`Canonical::Tree`]): the caller builds the tree.
    pub fn as_written(text: &str) -> Option<Self> {
        Self::as_written_fields(text, []).map(|(payload, [])| payload)
    }

    /// [`Payload::as_written`], with where the top-level fields named `keys` are in the
    /// payload's text, found in the same scan ([`canonical_fields`]): a reader of those
    /// fields (as strings) can keep them as a memo ([`Payload::set_memo`]) without reading
    /// the text again.
    pub fn as_written_fields<const N: usize>(
        text: &str,
        keys: [&str; N],
    ) -> Option<(Self, [Field; N])> {
        let (canonical, found) = canonical_fields(text, keys);
        let text = match canonical {
            Canonical::Same => text.to_owned(),
            Canonical::Rewritten(text) => text,
            Canonical::Tree => return None,
        };
        // Valid JSON: the caller's, or serde_json's writing of its value.
        Some((Self::from_text_unchecked(text), found))
    }

    /// [`Payload::as_written_fields`] of the JSON value `text` starts with (no whitespace
    /// before it), and that value's length in `text`: what follows the value is left unread,
    /// for a reader that finds where the value ends with this scan rather than before it (the
    /// payload inside an event's envelope, scanned in the envelope's one pass). `None` as
    /// for [`Payload::as_written`], and for a value that is not JSON.
    pub fn as_written_fields_leading<const N: usize>(
        text: &str,
        keys: [&str; N],
    ) -> Option<(Self, [Field; N], usize)> {
        let (canonical, found, len) = canon::leading_fields(text, keys);
        let text = match canonical {
            Canonical::Same => text[..len].to_owned(),
            Canonical::Rewritten(text) => text,
            Canonical::Tree => return None,
        };
        // Valid JSON: the caller's, or serde_json's writing of its value.
        Some((Self::from_text_unchecked(text), found, len))
    }

    /// The JSON text it was received as, while unchanged (`None` for one built as a tree).
    pub fn text(&self) -> Option<&str> {
        match &self.0 {
            Repr::Text { text, .. } => Some(text.get()),
            Repr::Tree(_) => None,
        }
    }

    /// Whether the value is a JSON object (read from the text without building the tree).
    pub fn is_object(&self) -> bool {
        match &self.0 {
            Repr::Text { text, .. } => text.get().trim_start().starts_with('{'),
            Repr::Tree(v) => v.is_object(),
        }
    }

    /// The value's tree, built on first use. A text nested deeper than serde_json's limit
    /// (128) reads as `null`.
    pub fn value(&self) -> &Value {
        match &self.0 {
            Repr::Text { text, tree } => tree.get_or_init(|| parse(text)),
            Repr::Tree(v) => v,
        }
    }

    /// The value's tree, to change: the text is dropped, and so is a memo
    /// ([`Payload::set_memo`]).
    pub fn value_mut(&mut self) -> &mut Value {
        self.1 = None;
        if let Repr::Text { text, tree } = &mut self.0 {
            let value = tree.take().unwrap_or_else(|| parse(text));
            self.0 = Repr::Tree(value);
        }
        match &mut self.0 {
            Repr::Tree(v) => v,
            Repr::Text { .. } => unreachable!("just replaced by its tree"),
        }
    }

    /// The value's tree, taken.
    pub fn into_value(self) -> Value {
        match self.0 {
            Repr::Text { text, mut tree } => tree.take().unwrap_or_else(|| parse(&text)),
            Repr::Tree(v) => v,
        }
    }

    /// Sets the top-level field `key`, a string, to `value` in the text, which stays written
    /// as its tree would be: when the text is so written ([`canonical`]) and holds `key` as a
    /// string (the field keeps its place, as it does in the tree). Else, or for a payload
    /// held as a tree, nothing changes and `false` is returned (the caller changes the tree).
    /// A memo is dropped.
    pub fn set_str_in_text(&mut self, key: &str, value: &str) -> bool {
        let Repr::Text { text, .. } = &self.0 else {
            return false;
        };
        let text = text.get();
        if canonical(text) != Canonical::Same {
            return false;
        }
        let Some(at) = string_field(text, key) else {
            return false;
        };
        let mut out = Vec::with_capacity(text.len() - at.len() + escaped_len(value));
        out.extend_from_slice(&text.as_bytes()[..at.start]);
        if serde_json::to_writer(&mut out, value).is_err() {
            return false;
        }
        out.extend_from_slice(&text.as_bytes()[at.end..]);
        let Ok(out) = String::from_utf8(out) else {
            return false;
        };
        // Valid JSON: the text with one string replaced by serde_json's writing of another.
        *self = Self::from_text_unchecked(out);
        true
    }

    /// Keeps `memo`, what a reader that has read this payload already found in it, for a
    /// later reader to take ([`Payload::memo`]) instead of reading the text again: one
    /// typed pass over an event's body can serve the stages after it. The caller vouches
    /// that `memo` is exactly what the later reader's own read of the payload would find.
    /// One memo a payload (a second replaces the first); a change (`DerefMut`) drops it,
    /// a clone shares it.
    pub fn set_memo<T: Any + Send + Sync>(&mut self, memo: T) {
        self.1 = Some(Arc::new(memo));
    }

    /// [`Payload::set_memo`] of a memo made in its `Arc` (`Arc::new(memo)` where the reader
    /// makes it, so the memo is not moved again on its way to the payload).
    pub fn set_memo_arc(&mut self, memo: Arc<dyn Any + Send + Sync>) {
        self.1 = Some(memo);
    }

    /// The memo of type `T` a reader kept ([`Payload::set_memo`]), if any.
    pub fn memo<T: Any>(&self) -> Option<&T> {
        self.1.as_deref().and_then(|m| m.downcast_ref())
    }

    /// Takes the memo of type `T` off the payload, when it is one and nothing else shares it
    /// (a clone of the payload does); else leaves it there and returns `None`.
    pub fn take_memo<T: Any + Send + Sync>(&mut self) -> Option<T> {
        let memo = self.1.take()?;
        match memo.downcast::<T>().map(Arc::try_unwrap) {
            Ok(Ok(memo)) => Some(memo),
            Ok(Err(shared)) => {
                self.1 = Some(shared);
                None
            }
            Err(other) => {
                self.1 = Some(other);
                None
            }
        }
    }

    /// The fields `T` names, decoded from the text without a tree (strings borrowed where
    /// they need no unescaping). Declare the fields [`LooseStr`] / [`LooseObj`] (or
    /// `Option<IgnoredAny>` for "present and not null") with `#[serde(default)]`: then a
    /// field of another shape reads as absent, as a tree lookup would. Text the typed
    /// decode refuses (duplicate keys: the tree keeps the last) is read through the tree;
    /// a value that is not an object reads as `T::default()`.
    pub fn read<'a, T: Deserialize<'a> + Default>(&'a self) -> T {
        // A derived struct also reads an array, by position: only objects are read.
        if !self.is_object() {
            return T::default();
        }
        let from_tree = |v: &'a Value| T::deserialize(v).unwrap_or_default();
        match &self.0 {
            Repr::Text { text, tree } => match tree.get() {
                Some(v) => from_tree(v),
                None => {
                    serde_json::from_str(text.get()).unwrap_or_else(|_| from_tree(self.value()))
                }
            },
            Repr::Tree(v) => from_tree(v),
        }
    }
}

/// `text` as a `RawValue` without validating it (no copy): through the raw-value protocol
/// serde_json's `Box<RawValue>` offers deserializers other than its own (a one-entry map
/// keyed by its token, whose value is the text). Should a serde_json release change the
/// protocol, the text is validated instead (slower; text that is not JSON is then `null`);
/// a test holds that the protocol is the one used. For text serde_json wrote (valid by
/// construction) or a reader validates.
pub fn raw_unchecked(text: String) -> Box<RawValue> {
    use serde::de::value::{BorrowedStrDeserializer, Error, StringDeserializer};
    use serde::de::{DeserializeSeed, MapAccess, Visitor};

    /// serde_json's name for the raw-value protocol (`serde_json::raw::TOKEN`).
    const TOKEN: &str = "$serde_json::private::RawValue";

    struct Text(Option<String>);

    impl<'de> Deserializer<'de> for &mut Text {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
            Err(serde::de::Error::custom("only a RawValue is read from unchecked text"))
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            if name != TOKEN {
                return self.deserialize_any(visitor);
            }
            visitor.visit_map(self)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct seq tuple tuple_struct map struct enum
            identifier ignored_any
        }
    }

    impl<'de> MapAccess<'de> for Text {
        type Error = Error;

        fn next_key_seed<K: DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, Error> {
            match self.0 {
                Some(_) => seed.deserialize(BorrowedStrDeserializer::new(TOKEN)).map(Some),
                None => Ok(None),
            }
        }

        fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
            let text = self.0.take().unwrap_or_default();
            seed.deserialize(StringDeserializer::new(text))
        }
    }

    let mut reader = Text(Some(text));
    match Box::<RawValue>::deserialize(&mut reader) {
        Ok(raw) => raw,
        Err(_) => reader.0.and_then(|text| RawValue::from_string(text).ok()).unwrap_or_else(null),
    }
}

/// Where the top-level field `key` of `text` (an object written as serde_json writes it, so
/// its keys need no unescaping and none is sent twice) is, when it is a string: its text,
/// quotes included.
fn string_field(text: &str, key: &str) -> Option<std::ops::Range<usize>> {
    use serde::de::{IgnoredAny, MapAccess, Visitor};

    struct Find<'k>(&'k str);

    impl<'de> Visitor<'de> for Find<'_> {
        type Value = Option<&'de RawValue>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(key) = map.next_key::<&'de str>()? {
                if key == self.0 {
                    found = Some(map.next_value::<&'de RawValue>()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }

    let raw = serde_json::Deserializer::from_str(text).deserialize_map(Find(key)).ok()??;
    let raw = raw.get();
    if !raw.starts_with('"') {
        return None;
    }
    let start = raw.as_ptr().addr().checked_sub(text.as_ptr().addr())?;
    (start + raw.len() <= text.len()).then_some(start..start + raw.len())
}

/// The length of `value` written by serde_json as a JSON string, quotes included.
fn escaped_len(value: &str) -> usize {
    2 + value
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).unwrap_or_default()
}

fn parse(text: &RawValue) -> Value {
    serde_json::from_str(text.get()).unwrap_or(Value::Null)
}

impl Default for Payload {
    /// An empty object.
    fn default() -> Self {
        Self(Repr::Tree(Value::Object(Map::new())), None)
    }
}

impl Deref for Payload {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl DerefMut for Payload {
    fn deref_mut(&mut self) -> &mut Value {
        self.value_mut()
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self(Repr::Tree(value), None)
    }
}

impl From<Map<String, Value>> for Payload {
    fn from(map: Map<String, Value>) -> Self {
        Self(Repr::Tree(Value::Object(map)), None)
    }
}

impl From<Box<RawValue>> for Payload {
    fn from(text: Box<RawValue>) -> Self {
        Self::from_text(text)
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl PartialEq<Value> for Payload {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Text { text, .. } => f.debug_tuple("Payload").field(&text.get()).finish(),
            Repr::Tree(v) => f.debug_tuple("Payload").field(v).finish(),
        }
    }
}

impl Serialize for Payload {
    /// The text as received, byte for byte, or the tree.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Text { text, .. } => text.serialize(serializer),
            Repr::Tree(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Payload {
    /// Decoded as a tree (any deserializer; not the event path's way in).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests;
