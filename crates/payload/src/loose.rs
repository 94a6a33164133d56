//! Lenient field types for typed reads: a field of another shape than asked for reads as
//! absent instead of failing the whole decode.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

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

/// A field present with any value, `null` included (which an `Option` field reads as
/// absent), read as `T`: `Some` where `value.get(key)` finds something, for lookups that
/// try the next path only when nothing is there (`summary.steps_taken`, else `steps`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Present<T>(pub Option<T>);

impl<T> Default for Present<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Present<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(|t| Self(Some(t)))
    }
}

/// An array field read as a list of `T` (whose elements should be loose): absent for any
/// other value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LooseVec<T>(pub Option<Vec<T>>);

impl<T> Default for LooseVec<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<T> LooseVec<T> {
    /// The elements, if the field was an array.
    pub fn get(&self) -> Option<&[T]> {
        self.0.as_deref()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LooseVec<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct VecVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for VecVisitor<T> {
            type Value = LooseVec<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(LooseVec(Some(items)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(LooseVec(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LooseVec(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LooseVec(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LooseVec(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LooseVec(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LooseVec(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LooseVec(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LooseVec(None))
            }
        }
        deserializer.deserialize_any(VecVisitor(PhantomData))
    }
}

/// A field that is a string or a number (as the tree holds it, so it is written as the
/// tree writes it: `1e2` as `100.0`); absent for any other value (as an id in
/// `{"id": "a"}` and `{"id": 7}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum LooseStrOrNum<'a> {
    /// Neither.
    #[default]
    Absent,
    /// A string.
    Str(Cow<'a, str>),
    /// A number.
    Num(Number),
}

impl<'de: 'a, 'a> Deserialize<'de> for LooseStrOrNum<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ScalarVisitor<'a> {
            type Value = LooseStrOrNum<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LooseStrOrNum::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LooseStrOrNum::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(LooseStrOrNum::Str(Cow::Owned(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(LooseStrOrNum::Num(v.into()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(LooseStrOrNum::Num(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                // A tree holds a non-finite float as `null`.
                Ok(Number::from_f64(v).map_or(LooseStrOrNum::Absent, LooseStrOrNum::Num))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LooseStrOrNum::Absent)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LooseStrOrNum::Absent)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LooseStrOrNum::Absent)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LooseStrOrNum::Absent)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LooseStrOrNum::Absent)
            }
        }
        deserializer.deserialize_any(ScalarVisitor(PhantomData))
    }
}

/// A number field as `u64` (a non-negative integer), absent for any other value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LooseU64(pub Option<u64>);

/// A number field as `i64` (an integer in its range), absent for any other value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LooseI64(pub Option<i64>);

/// A number field as `f64` (any JSON number), absent for any other value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LooseF64(pub Option<f64>);

/// A boolean field, absent for any other value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LooseBool(pub Option<bool>);

/// The visitor of a scalar field: `$b`, `$u`, `$i` and `$f` turn a boolean or a number into
/// the field, or not; any other value is absent.
macro_rules! loose_scalar {
    ($ty:ident, $b:expr, $u:expr, $i:expr, $f:expr) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct ScalarVisitor;
                impl<'de> Visitor<'de> for ScalarVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("any JSON value")
                    }
                    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                        Ok($ty($b(v)))
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
                deserializer.deserialize_any(ScalarVisitor)
            }
        }
    };
}

// As `Value::as_u64`, `as_i64`, `as_f64` and `as_bool` read scalars.
loose_scalar!(LooseU64, |_| None, Some, |i: i64| u64::try_from(i).ok(), |_| None);
loose_scalar!(LooseI64, |_| None, |u: u64| i64::try_from(u).ok(), Some, |_| None);
#[allow(clippy::cast_precision_loss)]
fn u_as_f64(u: u64) -> Option<f64> {
    Some(u as f64)
}
#[allow(clippy::cast_precision_loss)]
fn i_as_f64(i: i64) -> Option<f64> {
    Some(i as f64)
}
loose_scalar!(LooseF64, |_| None, u_as_f64, i_as_f64, Some);
loose_scalar!(LooseBool, Some, |_| None, |_| None, |_| None);
