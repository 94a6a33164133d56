//! [`EventId`]: an engine event's id, kept inline when it is short (as engines' ids are: a
//! BreadBoard `seq` as text, a Kilo event id of 30 bytes), so that an event costs no
//! allocation for it.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest id kept inline: a Kilo event id (`evt_` and 26 characters) fits.
const INLINE: usize = 30;

/// An engine event's id: text, read and written as a JSON string exactly as a `String` is.
///
/// Why not a `String`: every streamed event carries one, a BreadBoard id is a few digits and
/// a Kilo id 30 bytes, and a `String` is an allocation (and a free) per event. Up to 30
/// bytes are kept in the value itself; a longer id is on the heap. Either way it is 32
/// bytes (a `String` is 24).
#[derive(Clone)]
pub struct EventId(Repr);

// The inline bytes, their length and the variant's tag fill four words.
const _: () = assert!(size_of::<EventId>() == 32 && size_of::<Option<EventId>>() == 32);

#[derive(Clone)]
enum Repr {
    /// `bytes[..len]` is the id; always a whole `str`'s bytes (see [`EventId::as_str`]).
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    Heap(Box<str>),
}

impl EventId {
    /// The empty id.
    pub const fn new() -> Self {
        EventId(Repr::Inline { len: 0, bytes: [0; INLINE] })
    }

    /// The id as text.
    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                let bytes = &bytes[..usize::from(*len)];
                // SAFETY: an inline id is only made by `From<&str>`, which copies a whole
                // `str` (valid UTF-8) into `bytes[..len]`; nothing else writes them.
                unsafe { std::str::from_utf8_unchecked(bytes) }
            }
            Repr::Heap(text) => text,
        }
    }

    /// Whether the id is kept inline (no allocation): the representation, for its tests.
    #[cfg(test)]
    pub(crate) fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }
}

impl Default for EventId {
    fn default() -> Self {
        EventId::new()
    }
}

impl From<&str> for EventId {
    #[inline]
    fn from(text: &str) -> Self {
        // A stream without `id:` lines gives every event the empty id: no copy.
        if text.is_empty() {
            EventId::new()
        } else if text.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            // `text.len() <= 30` fits a `u8`.
            EventId(Repr::Inline { len: text.len() as u8, bytes })
        } else {
            EventId(Repr::Heap(text.into()))
        }
    }
}

impl From<String> for EventId {
    /// A long id keeps the `String`'s allocation; a short one is copied inline.
    #[inline]
    fn from(text: String) -> Self {
        if text.len() <= INLINE {
            EventId::from(text.as_str())
        } else {
            EventId(Repr::Heap(text.into()))
        }
    }
}

impl From<EventId> for String {
    fn from(id: EventId) -> Self {
        match id.0 {
            Repr::Heap(text) => text.into(),
            Repr::Inline { .. } => id.as_str().to_owned(),
        }
    }
}

impl Deref for EventId {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for EventId {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for EventId {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl PartialEq for EventId {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for EventId {}

impl std::hash::Hash for EventId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for EventId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for EventId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for EventId {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<EventId> for str {
    fn eq(&self, other: &EventId) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<EventId> for &str {
    fn eq(&self, other: &EventId) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<EventId> for String {
    fn eq(&self, other: &EventId) -> bool {
        self == other.as_str()
    }
}

impl Serialize for EventId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl serde::de::Visitor<'_> for Visitor {
            type Value = EventId;

            // A `String`'s words: errors read as they did.
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<EventId, E> {
                Ok(EventId::from(text))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<EventId, E> {
                Ok(EventId::from(text))
            }
        }

        deserializer.deserialize_string(Visitor)
    }
}
