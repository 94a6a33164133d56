//! The few fields of Kilo payloads the classifier, the batcher and the reducers read, as
//! typed borrowed reads of the payload's text ([`Payload::read`]): the hot event types
//! never build a tree. Each read finds what the tree lookups of `crate::json` would: a
//! field of another shape is absent, and the `non_empty` accessors skip empty strings as
//! `str_at` does.

use std::borrow::Cow;

use bb_payload::{LooseObj, LooseStr};
use serde::Deserialize;

/// `message.updated` and session events: `info.{role, id, title}` and whether the message
/// ended (`info.time.completed`) or failed (`info.error`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct InfoFields<'a> {
    #[serde(borrow)]
    pub(crate) info: LooseObj<Info<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Info<'a> {
    #[serde(borrow)]
    pub(crate) role: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) title: LooseStr<'a>,
    /// Present and not null.
    pub(crate) error: Option<serde::de::IgnoredAny>,
    pub(crate) time: LooseObj<Completed>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Completed {
    /// Present and not null.
    pub(crate) completed: Option<serde::de::IgnoredAny>,
}

/// `message.part.updated`: the part's kind and tool status (what classifies it).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PartKind<'a> {
    #[serde(borrow)]
    pub(crate) part: LooseObj<PartHead<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PartHead<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) state: LooseObj<Status<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Status<'a> {
    #[serde(borrow)]
    pub(crate) status: LooseStr<'a>,
}

/// `message.part.updated` of a text or reasoning part: ids and full text.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TextPart<'a> {
    #[serde(borrow)]
    pub(crate) part: LooseObj<PartText<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PartText<'a> {
    #[serde(borrow)]
    pub(crate) id: LooseStr<'a>,
    #[serde(rename = "messageID", borrow)]
    pub(crate) message_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) text: LooseStr<'a>,
}

/// `message.part.delta`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Delta<'a> {
    #[serde(rename = "messageID", borrow)]
    pub(crate) message_id: LooseStr<'a>,
    #[serde(rename = "partID", borrow)]
    pub(crate) part_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) field: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) delta: LooseStr<'a>,
}

/// `session.status`: `status.type`, or `status` itself when it is a string.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RunStatus<'a> {
    #[serde(borrow)]
    pub(crate) status: StatusField<'a>,
}

/// A `status` that is either an object with a `type` or a string.
#[derive(Debug, Default)]
pub(crate) struct StatusField<'a> {
    kind: Option<Cow<'a, str>>,
    text: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for StatusField<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = StatusField<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(StatusField { kind: None, text: Some(Cow::Borrowed(v)) })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StatusField { kind: None, text: Some(Cow::Owned(v.to_owned())) })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                // Duplicate keys keep the last, as the tree does.
                let mut kind = None;
                while let Some(key) = map.next_key::<LooseStr<'de>>()? {
                    if key.get() == Some("type") {
                        kind = map.next_value::<LooseStr<'a>>()?.0;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(StatusField { kind, text: None })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(StatusField::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(StatusField::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(StatusField::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(StatusField::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(StatusField::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StatusField::default())
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl StatusField<'_> {
    /// `status.type` when non-empty, else `status` when a non-empty string (`str_at`'s
    /// order).
    pub(crate) fn get(&self) -> Option<&str> {
        let kind = self.kind.as_deref().filter(|s| !s.is_empty());
        kind.or_else(|| self.text.as_deref().filter(|s| !s.is_empty()))
    }
}

/// The string when it is not empty (what `str_at` finds).
pub(crate) fn non_empty<'b>(s: &'b LooseStr<'_>) -> Option<&'b str> {
    s.get().filter(|s| !s.is_empty())
}
