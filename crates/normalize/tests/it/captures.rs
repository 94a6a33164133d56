//! The engine captures (`bb_test_support::captures`) as raw events, and
//! normalizing ids and times so snapshots do not depend on capture runs.

use std::collections::HashMap;

use serde_json::Value;

pub(crate) use bb_test_support::captures::{captures, raw_events as read, snapshot_name};

fn is_engine_id(s: &str) -> bool {
    let uuid = s.len() == 36
        && s.chars().filter(|c| *c == '-').count() == 4
        && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    let prefixed = ["evt_", "ses_", "msg_", "prt_", "per_", "que_", "call_"].iter().any(|p| {
        s.strip_prefix(p)
            .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_alphanumeric()))
    });
    uuid || prefixed
}

const TIME_KEYS: &[&str] = &["createdAt", "created_at", "latency_ms", "timestamp", "ts"];

/// Replaces engine ids by `<id N>` (numbered by first appearance, so relations survive) and
/// times by `<time>`.
pub(crate) fn normalize_ids(v: &mut Value) {
    fn go(v: &mut Value, ids: &mut HashMap<String, usize>) {
        match v {
            Value::String(s) if is_engine_id(s) => {
                let n = ids.len() + 1;
                let n = *ids.entry(s.clone()).or_insert(n);
                *s = format!("<id {n}>");
            }
            Value::Array(a) => a.iter_mut().for_each(|x| go(x, ids)),
            Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    if TIME_KEYS.contains(&k.as_str()) && (x.is_number() || x.is_string()) {
                        *x = Value::String("<time>".to_owned());
                    } else {
                        go(x, ids);
                    }
                }
            }
            _ => {}
        }
    }
    go(v, &mut HashMap::new());
}
