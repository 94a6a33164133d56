//! Constant-valued wire fields: the `v: 1` version marker and the single-value kind tags.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};

/// The `v` field of a v1 envelope: always the number 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ProtocolV1;

impl Serialize for ProtocolV1 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u8(1)
    }
}

impl JsonSchema for ProtocolV1 {
    fn schema_name() -> Cow<'static, str> {
        "ProtocolV1".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "const": 1 })
    }
}

/// Declares a unit type that serializes as one constant string, with a matching schema.
macro_rules! tag {
    ($(#[$meta:meta])* $Name:ident = $value:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $Name;

        impl Serialize for $Name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($value)
            }
        }

        impl JsonSchema for $Name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($Name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({ "type": "string", "const": $value })
            }
        }
    };
}

tag!(
    /// `kind: "req"` of a v1 request.
    ReqTag = "req"
);
tag!(
    /// `kind: "res"` of a v1 response.
    ResTag = "res"
);
tag!(
    /// `kind: "evt"` of a v1 event.
    EvtTag = "evt"
);
tag!(
    /// `type: "request"` of a WebSocket request.
    RequestTag = "request"
);
tag!(
    /// `type: "response"` of a WebSocket response.
    ResponseTag = "response"
);
tag!(
    /// `type: "event"` of a WebSocket event.
    EventTag = "event"
);
