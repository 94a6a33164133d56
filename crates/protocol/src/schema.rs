//! JSON Schema generation for every envelope, params, result and event payload. The files
//! under `schemas/` at the repository root are this module's output.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::Value;

use crate::v1::{
    ConnectionPayload, EventsPayload, PromptClosedPayload, StatePayload, V1Event, V1Message,
    V1Method, V1Request, V1Response,
};
use crate::ws::{WsEvent, WsMessage, WsMethod, WsPayload, WsRequest, WsResponse};

/// The root schema of `T` (JSON Schema 2020-12).
pub(crate) fn root<T: JsonSchema + ?Sized>() -> Schema {
    SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>()
}

/// Every schema with its path relative to `schemas/`, in a stable order.
pub fn all_schemas() -> Vec<(String, Schema)> {
    let mut out = vec![
        ("v1/message.json".to_owned(), optional_params(root::<V1Message>())),
        ("v1/request.json".to_owned(), optional_params(root::<V1Request>())),
        ("v1/response.json".to_owned(), root::<V1Response>()),
        ("v1/event.json".to_owned(), root::<V1Event>()),
        ("v1/topics/bb-connection.json".to_owned(), root::<ConnectionPayload>()),
        ("v1/topics/bb-state.json".to_owned(), root::<StatePayload>()),
        ("v1/topics/bb-events.json".to_owned(), root::<EventsPayload>()),
        ("v1/events/bb.prompt.closed.json".to_owned(), root::<PromptClosedPayload>()),
        ("ws/message.json".to_owned(), optional_params(root::<WsMessage>())),
        ("ws/request.json".to_owned(), optional_params(root::<WsRequest>())),
        ("ws/response.json".to_owned(), root::<WsResponse>()),
        ("ws/event.json".to_owned(), root::<WsEvent>()),
        ("ws/events/payload.json".to_owned(), root::<WsPayload>()),
    ];
    for &method in V1Method::ALL {
        out.push((format!("v1/methods/{method}.params.json"), method.params_schema()));
        out.push((format!("v1/methods/{method}.result.json"), method.result_schema()));
    }
    for &method in WsMethod::ALL {
        out.push((format!("ws/methods/{method}.params.json"), method.params_schema()));
        out.push((format!("ws/methods/{method}.result.json"), method.result_schema()));
    }
    out
}

/// The decoder reads absent `params` as `{}`, so for every method whose params have no
/// required field, `params` is dropped from the request variant's `required` list.
fn optional_params(schema: Schema) -> Schema {
    let mut value = schema.to_value();
    let defs = value.get("$defs").cloned().unwrap_or(Value::Null);
    relax(&mut value, &defs);
    Schema::try_from(value).unwrap_or_else(|_| Schema::default())
}

pub(crate) fn relax(node: &mut Value, defs: &Value) {
    match node {
        Value::Object(map) => {
            let params_optional = map
                .get("properties")
                .and_then(|p| p.get("params"))
                .and_then(|p| p.get("$ref"))
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .and_then(|name| defs.get(name))
                .is_some_and(|def| {
                    def.get("required").and_then(Value::as_array).is_none_or(Vec::is_empty)
                });
            if params_optional && let Some(Value::Array(required)) = map.get_mut("required") {
                required.retain(|r| r != "params");
            }
            for child in map.values_mut() {
                relax(child, defs);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|child| relax(child, defs)),
        _ => {}
    }
}

/// Pretty JSON text of a schema, newline-terminated, as committed.
pub fn render(schema: &Schema) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}
