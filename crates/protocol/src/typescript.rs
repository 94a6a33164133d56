//! TypeScript declarations for the webview side, rendered from the same JSON Schemas as
//! `schemas/` (committed as `schemas/webview.d.ts`).

use std::fmt::Write as _;

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::schema::relax;
use crate::v1::{V1Message, V1Method};
use crate::ws::{WsMessage, WsMethod};

/// Every wire type as a TypeScript declaration, sorted by name.
pub fn declarations() -> String {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    generator.subschema_for::<V1Message>();
    generator.subschema_for::<WsMessage>();
    V1Method::register_schemas(&mut generator);
    WsMethod::register_schemas(&mut generator);
    let all = Value::Object(generator.definitions().clone());
    let mut defs: Vec<(String, Value)> = generator
        .definitions()
        .iter()
        .map(|(name, schema)| {
            let mut schema = schema.clone();
            relax(&mut schema, &all);
            (name.clone(), schema)
        })
        .collect();
    defs.sort_by(|a, b| a.0.cmp(&b.0));

    let mut out = String::from(
        "// Generated from the bb-protocol types; do not edit.\n\
         // Regenerate: UPDATE_SCHEMAS=1 cargo test -p bb-protocol\n",
    );
    for (name, schema) in defs {
        out.push('\n');
        if let Some(doc) = schema.get("description").and_then(Value::as_str) {
            out.push_str("/** ");
            out.push_str(&doc.replace("*/", "*\\/").replace('\n', "\n * "));
            out.push_str(" */\n");
        }
        let _ = writeln!(out, "export type {name} = {};", ts(&schema, 0));
    }
    out
}

fn indent(level: usize) -> String {
    "  ".repeat(level)
}

/// The TypeScript type of a schema node.
fn ts(schema: &Value, level: usize) -> String {
    let Value::Object(node) = schema else {
        return if schema == &Value::Bool(false) { "never".into() } else { "unknown".into() };
    };
    if let Some(target) = node.get("$ref").and_then(Value::as_str) {
        let name = target.rsplit('/').next().unwrap_or("unknown").to_owned();
        // An internally tagged variant: its tag beside the type it tags.
        if node.contains_key("properties") {
            return format!("({} & {name})", object(node, level));
        }
        return name;
    }
    if let Some(value) = node.get("const") {
        return literal(value);
    }
    if let Some(Value::Array(values)) = node.get("enum") {
        return values.iter().map(literal).collect::<Vec<_>>().join(" | ");
    }
    let mut parts = Vec::new();
    let has_props = node.contains_key("properties");
    if has_props {
        parts.push(object(node, level));
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(variants)) = node.get(key) {
            let union: Vec<_> = variants.iter().map(|v| ts(v, level)).collect();
            parts.push(format!("({})", union.join(" | ")));
        }
    }
    if let Some(Value::Array(all)) = node.get("allOf") {
        parts.extend(all.iter().map(|v| ts(v, level)));
    }
    if parts.is_empty() {
        parts.push(by_type(node, level));
    }
    parts.join(" & ")
}

fn by_type(node: &Map<String, Value>, level: usize) -> String {
    let types: Vec<&str> = match node.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return "unknown".into(),
    };
    types
        .iter()
        .map(|t| match *t {
            "string" => "string".to_owned(),
            "integer" | "number" => "number".to_owned(),
            "boolean" => "boolean".to_owned(),
            "null" => "null".to_owned(),
            "array" => {
                let item = node.get("items").map_or_else(|| "unknown".into(), |i| ts(i, level));
                format!("Array<{item}>")
            }
            "object" => match node.get("additionalProperties") {
                Some(Value::Bool(false)) | None => "Record<string, unknown>".to_owned(),
                Some(Value::Bool(true)) => "Record<string, unknown>".to_owned(),
                Some(value) => format!("Record<string, {}>", ts(value, level)),
            },
            _ => "unknown".to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn object(node: &Map<String, Value>, level: usize) -> String {
    let required: Vec<&str> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(Value::Object(props)) = node.get("properties") else { return "{}".into() };
    let mut out = String::from("{\n");
    for (key, schema) in props {
        let optional = if required.contains(&key.as_str()) { "" } else { "?" };
        let _ = writeln!(out, "{}{key}{optional}: {};", indent(level + 1), ts(schema, level + 1));
    }
    out.push_str(&indent(level));
    out.push('}');
    out
}

fn literal(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "unknown".into())
}
