//! Count fields (`maxBytes`, `headLines`, …): non-negative integers written as JSON integer
//! literals, at most 2^53 - 1 (exact in a JavaScript number). Negatives, anything written
//! with a fraction or exponent (`1.5`, `10.0`, `1e3`) and larger values are rejected.

use serde::Deserialize;
use serde::de::{self, Deserializer, Unexpected, Visitor};
use std::collections::BTreeMap;
use std::fmt;

/// Largest count accepted: the largest integer a JavaScript number holds exactly.
pub(crate) const MAX_COUNT: u64 = (1 << 53) - 1;

struct CountVisitor;

impl Visitor<'_> for CountVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a non-negative integer no larger than {MAX_COUNT}")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        if v <= MAX_COUNT { Ok(v) } else { Err(E::invalid_value(Unexpected::Unsigned(v), &self)) }
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v)
            .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
            .and_then(|v| self.visit_u64(v))
    }
}

/// `deserialize_with` for an optional count (`null` reads as absent).
pub(crate) fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    struct OptionVisitor;

    impl<'de> Visitor<'de> for OptionVisitor {
        type Value = Option<u64>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a non-negative integer or null")
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(CountVisitor).map(Some)
        }
    }

    d.deserialize_option(OptionVisitor)
}

/// `deserialize_with` for an optional map of counts (`null` reads as absent).
pub(crate) fn map_option<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, u64>>, D::Error> {
    struct Count(u64);

    impl<'de> Deserialize<'de> for Count {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(CountVisitor).map(Count)
        }
    }

    let map: Option<BTreeMap<String, Count>> = Option::deserialize(d)?;
    Ok(map.map(|m| m.into_iter().map(|(k, Count(v))| (k, v)).collect()))
}

/// `deserialize_with` for a required count.
pub(crate) fn required<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(CountVisitor)
}
