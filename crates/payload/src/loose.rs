//! Lenient field types for typed reads: a field of another shape than asked for reads as
//! absent instead of failing the whole decode.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A string field: the string when the field is one (borrowed when it needs no
/// unescaping), absent for any other value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LooseStr<'a>(pub Option<Cow<'a, str>>);

impl<'a> LooseStr<'a> {
    /// The string, if the field was one.
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// An object field read as `T` (whose own fields should be loose): absent for any other
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LooseObj<T>(pub Option<T>);

impl<T> Default for LooseObj<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<T> LooseObj<T> {
    /// The object, if the field was one.
    pub fn get(&self) -> Option<&T> {
        self.0.as_ref()
    }
}

/// Consumes what the other `visit_*` methods leave: every non-matching value is skipped.
macro_rules! skip_others {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
}

impl<'de: 'a, 'a> Deserialize<'de> for LooseStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for StrVisitor<'a> {
            type Value = LooseStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LooseStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LooseStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(LooseStr(Some(Cow::Owned(v))))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LooseStr(None))
            }
            skip_others!();
        }
        deserializer.deserialize_any(StrVisitor(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LooseObj<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjVisitor<T> {
            type Value = LooseObj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(LooseObj(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|t| LooseObj(Some(t)))
            }
            skip_others!();
        }
        deserializer.deserialize_any(ObjVisitor(PhantomData))
    }
}

/// A field that is a string or an object read as `T`; absent for any other value (as
/// `status` in `{"status": "idle"}` and `{"status": {"type": "idle"}}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum LooseStrOrObj<'a, T> {
    /// Neither.
    #[default]
    Absent,
    /// A string.
    Str(Cow<'a, str>),
    /// An object.
    Obj(T),
}

impl<'de: 'a, 'a, T: Deserialize<'de>> Deserialize<'de> for LooseStrOrObj<'a, T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EitherVisitor<'a, T>(PhantomData<(&'a (), T)>);
        impl<'de: 'a, 'a, T: Deserialize<'de>> Visitor<'de> for EitherVisitor<'a, T> {
            type Value = LooseStrOrObj<'a, T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LooseStrOrObj::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LooseStrOrObj::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(LooseStrOrObj::Str(Cow::Owned(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(LooseStrOrObj::Obj)
            }
            skip_others!();
        }
        deserializer.deserialize_any(EitherVisitor(PhantomData))
    }
}

/// A number field as `u64` (a non-negative integer), absent for any other value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LooseU64(pub Option<u64>);

/// A number field as `f64` (any JSON number), absent for any other value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LooseF64(pub Option<f64>);

/// The visitor of a number field: `$num` turns the number into the field, or not.
macro_rules! loose_number {
    ($ty:ident, $u:expr, $i:expr, $f:expr) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct NumVisitor;
                impl<'de> Visitor<'de> for NumVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("any JSON value")
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                        Ok($ty($u(v)))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                        Ok($ty($i(v)))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                        Ok($ty($f(v)))
                    }
                    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                        Ok($ty(None))
                    }
                    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                        Ok($ty(None))
                    }
                    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                        Ok($ty(None))
                    }
                    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                        Ok($ty(None))
                    }
                    fn visit_seq<A: SeqAccess<'de>>(
                        self,
                        mut seq: A,
                    ) -> Result<Self::Value, A::Error> {
                        while seq.next_element::<IgnoredAny>()?.is_some() {}
                        Ok($ty(None))
                    }
                    fn visit_map<A: MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<Self::Value, A::Error> {
                        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                        Ok($ty(None))
                    }
                }
                deserializer.deserialize_any(NumVisitor)
            }
        }
    };
}

// As `Value::as_u64` and `Value::as_f64` read numbers.
loose_number!(LooseU64, Some, |i: i64| u64::try_from(i).ok(), |_| None);
#[allow(clippy::cast_precision_loss)]
fn u_as_f64(u: u64) -> Option<f64> {
    Some(u as f64)
}
#[allow(clippy::cast_precision_loss)]
fn i_as_f64(i: i64) -> Option<f64> {
    Some(i as f64)
}
loose_number!(LooseF64, u_as_f64, i_as_f64, Some);
