//! Small lookups over untrusted JSON payloads: every accessor tolerates any shape. A typed
//! read's field shown as text ([`Shown`]) renders as [`as_text`] renders it in the tree.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The value at a `/`-free key path, if every step is an object holding the key.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.get(*key)?;
    }
    Some(cur)
}

/// The first non-empty string found at any of the paths.
pub(crate) fn str_at<'a>(v: &'a Value, paths: &[&[&str]]) -> Option<&'a str> {
    paths.iter().filter_map(|p| at(v, p).and_then(Value::as_str)).find(|s| !s.is_empty())
}

/// The first string found at any of the paths, owned.
pub(crate) fn string_at(v: &Value, paths: &[&[&str]]) -> Option<String> {
    str_at(v, paths).map(str::to_owned)
}

/// A scalar id (string or integer) at any of the paths, as a string.
pub(crate) fn id_at(v: &Value, paths: &[&[&str]]) -> Option<String> {
    paths.iter().find_map(|p| match at(v, p)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// A boolean at the path.
pub(crate) fn bool_at(v: &Value, path: &[&str]) -> Option<bool> {
    at(v, path).and_then(Value::as_bool)
}

/// Renders a value as display text: strings verbatim, arrays of strings joined by newlines,
/// anything else as pretty JSON. `None` for null.
pub(crate) fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            Some(items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"))
        }
        other => serde_json::to_string_pretty(other).ok(),
    }
}

/// A field of a typed read, to be shown as text: a string as it is (borrowed when it needs
/// no unescaping), any other value as its tree (only that subtree is built); `null` is
/// nothing, as absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Shown<'a> {
    /// Absent or `null`.
    #[default]
    Nothing,
    /// A string.
    Str(Cow<'a, str>),
    /// Any other value.
    Tree(Value),
}

impl Shown<'_> {
    /// What [`as_text`] renders of the field's value.
    pub(crate) fn as_text(&self) -> Option<String> {
        match self {
            Self::Nothing => None,
            Self::Str(s) => Some(s.as_ref().to_owned()),
            Self::Tree(v) => as_text(v),
        }
    }

    /// Whether the field is an empty object.
    pub(crate) fn is_empty_object(&self) -> bool {
        matches!(self, Self::Tree(Value::Object(o)) if o.is_empty())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Shown<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ShownVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ShownVisitor<'a> {
            type Value = Shown<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Shown::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Shown::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Shown::Str(Cow::Owned(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Shown::Nothing)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Shown::Nothing)
            }
            // The rest as the tree holds it (a non-finite float as `null`).
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Shown::Tree(Value::Bool(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Shown::Tree(Value::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Shown::Tree(Value::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Shown::Tree(Value::from(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(Shown::Tree)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(Shown::Tree)
            }
        }
        deserializer.deserialize_any(ShownVisitor(PhantomData))
    }
}
