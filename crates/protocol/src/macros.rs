//! `define_calls!`: declares a transport's method table once and derives from it the typed
//! call enum (`method` + `params`), the method-name enum, params decoding, result checking and
//! the per-method schemas.

macro_rules! define_calls {
    (
        $(#[$call_meta:meta])*
        call $Call:ident;
        $(#[$method_meta:meta])*
        method $Method:ident;
        $(
            $(#[$vmeta:meta])*
            $Variant:ident = $name:literal => $Params:ty, $Result:ty;
        )+
    ) => {
        $(#[$call_meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
        #[serde(tag = "method", content = "params")]
        pub enum $Call {
            $( $(#[$vmeta])* #[serde(rename = $name)] $Variant($Params), )+
        }

        $(#[$method_meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $Method {
            $( $(#[$vmeta])* $Variant, )+
        }

        impl $Method {
            /// Every method, in declaration order.
            pub const ALL: &'static [$Method] = &[ $($Method::$Variant),+ ];

            /// The method name on the wire.
            pub fn as_str(self) -> &'static str {
                match self { $($Method::$Variant => $name),+ }
            }

            /// The method with this wire name, if the transport has one.
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($name => Some($Method::$Variant),)+ _ => None }
            }

            /// Checks that `result` has the shape of this method's typed result.
            pub fn check_result(self, result: &serde_json::Value) -> Result<(), serde_json::Error> {
                match self {
                    $($Method::$Variant => {
                        <$Result as serde::Deserialize>::deserialize(result).map(drop)
                    })+
                }
            }

            /// The JSON Schema of this method's params.
            pub fn params_schema(self) -> schemars::Schema {
                match self { $($Method::$Variant => crate::schema::root::<$Params>()),+ }
            }

            /// The JSON Schema of this method's result.
            pub fn result_schema(self) -> schemars::Schema {
                match self { $($Method::$Variant => crate::schema::root::<$Result>()),+ }
            }

            /// Registers every params and result type with `generator` (for its `$defs`).
            pub(crate) fn register_schemas(generator: &mut schemars::SchemaGenerator) {
                $(
                    generator.subschema_for::<$Params>();
                    generator.subschema_for::<$Result>();
                )+
            }

            /// Decodes params (already an object) into the typed call.
            pub(crate) fn parse_params(
                self,
                params: serde_json::Value,
            ) -> Result<$Call, serde_json::Error> {
                match self {
                    $($Method::$Variant => {
                        serde_json::from_value::<$Params>(params).map($Call::$Variant)
                    })+
                }
            }
        }

        impl std::fmt::Display for $Method {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $Call {
            /// The method this call invokes.
            pub fn method(&self) -> $Method {
                match self { $($Call::$Variant(_) => $Method::$Variant),+ }
            }
        }
    };
}

pub(crate) use define_calls;
