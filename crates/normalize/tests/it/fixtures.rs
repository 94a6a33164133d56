//! Every capture of both engines: a snapshot of the final view model, no unexpected unknown
//! types, and the batcher path (simulated time) giving the same view as direct reduction.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bb_normalize::{Batcher, Classified, EventClass, Priority, SessionView};

use crate::captures::{captures, normalize_ids, read, snapshot_name};

#[test]
fn view_model_snapshots() {
    let all = captures();
    assert!(all.len() >= 40, "captures missing: {}", all.len());
    for (engine, path) in all {
        let mut view = SessionView::new();
        for ev in read(engine, &path) {
            view.apply_event(ev);
        }
        let mut value = serde_json::to_value(&view).unwrap();
        normalize_ids(&mut value);
        insta::with_settings!({ snapshot_suffix => "", prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_json_snapshot!(snapshot_name(&path), value);
        });
    }
}

#[test]
fn only_documented_types_are_unknown() {
    let expected: BTreeSet<&str> =
        ["conversation.compaction.start", "conversation.compaction.end"].into();
    let mut unknown = BTreeSet::new();
    for (engine, path) in captures() {
        for ev in read(engine, &path) {
            let item = Classified::new(ev);
            if item.class == EventClass::Unknown {
                unknown.insert(item.event.kind.clone());
            }
        }
    }
    let unknown: BTreeSet<&str> = unknown.iter().map(|k| &**k).collect();
    assert_eq!(unknown, expected);
}

#[allow(clippy::disallowed_methods)]
fn epoch() -> Instant {
    Instant::now()
}

#[test]
fn batched_reduction_equals_direct_reduction_on_captures() {
    for (engine, path) in captures() {
        let events = read(engine, &path);
        let mut direct = SessionView::new();
        for ev in events.clone() {
            direct.apply_event(ev);
        }
        let mut batched = SessionView::new();
        let mut batcher = Batcher::new(Priority::Active);
        let mut now = epoch();
        for (i, ev) in events.into_iter().enumerate() {
            // A burst every few events, as the engines stream.
            now += Duration::from_millis(if i % 7 == 0 { 40 } else { 1 });
            batcher.handle_event(now, Classified::new(ev));
            if let Some(b) = batcher.poll_flush(now) {
                batched.apply_batch(&b);
            }
        }
        while let Some(due) = batcher.poll_timeout() {
            if let Some(b) = batcher.poll_flush(due.max(now)) {
                batched.apply_batch(&b);
            }
        }
        assert_eq!(batched, direct, "{}", path.display());
    }
}

#[test]
fn every_kilo_type_seen_in_the_shapes_file_is_classified() {
    use bb_normalize::{Engine, RawEvent};
    let path = bb_test_support::captures::engine_fixtures().join("kilo/event_shapes.json");
    let shapes: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut checked = 0;
    for (_, types) in shapes.as_object().unwrap() {
        for (kind, info) in types.as_object().unwrap() {
            let parts: Vec<String> = info["part_types"].as_array().map_or_else(Vec::new, |a| {
                a.iter().map(|p| p.as_str().unwrap().to_owned()).collect()
            });
            let payloads: Vec<serde_json::Value> = if parts.is_empty() {
                vec![serde_json::json!({})]
            } else {
                parts
                    .iter()
                    .map(|p| {
                        // "tool(bash:completed)" -> a tool part in that state.
                        let (ty, status) =
                            p.split_once('(').map_or((p.as_str(), None), |(t, rest)| {
                                (t, rest.trim_end_matches(')').split_once(':').map(|(_, s)| s))
                            });
                        serde_json::json!({"part": {"type": ty, "state": {"status": status}}})
                    })
                    .collect()
            };
            for payload in payloads {
                let class =
                    Classified::new(RawEvent::new(Engine::Kilo, kind.clone(), payload.clone()))
                        .class;
                assert_ne!(class, EventClass::Unknown, "{kind} {payload}");
                checked += 1;
            }
        }
    }
    assert!(checked > 40);
}
