//! Delta coalescing of both engines as the webview receives it: the last merged event's
//! envelope, the concatenated text, and (proptest) no text or other event lost or reordered.

use std::time::Duration;

use bb_protocol::v1::{EngineEvent, V1Topic};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{clock, drain, ready_host_of, run_to_idle, summary};
use crate::{Clock, Engine, HostConfig, Input};

fn event(id: &str, kind: &str, turn: Option<u64>, ts: Option<f64>, payload: Value) -> EngineEvent {
    let payload = match payload {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    EngineEvent {
        id: id.into(),
        event_type: kind.to_owned().into(),
        turn,
        ts,
        payload: payload.into(),
    }
}

fn kilo_delta(id: &str, part: &str, text: &str) -> EngineEvent {
    event(
        id,
        "message.part.delta",
        None,
        None,
        json!({"sessionID": "s", "messageID": "m", "partID": part, "field": "text", "delta": text}),
    )
}

/// Sends `events` one by one inside one cadence window of the selected session `s`, after a
/// first event that leaves at once; returns what the webview got for them.
fn through_host(engine: Engine, events: Vec<EngineEvent>) -> Vec<EngineEvent> {
    let c = clock();
    let mut h = ready_host_of(engine, HostConfig::default(), &c);
    h.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
    h.handle(Input::select(0, "s"), c.now());
    h.handle(super::events_in(&h, "s", vec![super::ev("warm")]), c.now());
    drain(&mut h);
    for e in events {
        h.handle(super::events_in(&h, "s", vec![e]), c.now());
        c.advance(Duration::from_millis(1));
    }
    events_of(run_to_idle(&mut h, &c))
}

fn events_of(topics: Vec<V1Topic>) -> Vec<EngineEvent> {
    topics
        .into_iter()
        .filter_map(|t| {
            if let V1Topic::Events(b) = t { Some(b.events.items().into_owned()) } else { None }
        })
        .flatten()
        .map(|item| item.event)
        .collect()
}

#[test]
fn kilo_deltas_coalesce_into_the_last_event() {
    let mut last = kilo_delta("e3", "p", "c");
    last.ts = Some(1_795_306_889_837.0);
    let out = through_host(
        Engine::Kilo,
        vec![kilo_delta("e1", "p", "a"), kilo_delta("e2", "p", "b"), last.clone()],
    );
    let mut want = last;
    want.payload["delta"] = json!("abc");
    assert_eq!(out, [want]);
}

#[test]
fn kilo_deltas_of_other_parts_or_around_other_events_stay_apart() {
    let out = through_host(
        Engine::Kilo,
        vec![
            kilo_delta("e1", "p", "a"),
            kilo_delta("e2", "q", "b"),
            event("e3", "message.part.updated", None, None, json!({"sessionID": "s"})),
            kilo_delta("e4", "q", "c"),
            kilo_delta("e5", "q", "d"),
        ],
    );
    let ids: Vec<&str> = out.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["e1", "e2", "e3", "e5"]);
    assert_eq!(out[3].payload["delta"], "cd");
}

#[test]
fn breadboard_deltas_coalesce_by_message_and_turn() {
    let d = |id: &str, turn: u64, text: &str| {
        event(
            id,
            "assistant.message.delta",
            Some(turn),
            Some(1000.0 + turn as f64),
            json!({"message_id": "m", "delta": text}),
        )
    };
    let legacy = |id: &str, text: &str| {
        event(id, "assistant_delta", Some(2), None, json!({"message_id": "m", "text": text}))
    };
    let out = through_host(
        Engine::BreadBoard,
        vec![d("1", 1, "a"), d("2", 1, "b"), d("3", 2, "c"), legacy("4", "x"), legacy("5", "y")],
    );
    let got: Vec<(&str, Option<u64>, Option<f64>, &Value)> = out
        .iter()
        .map(|e| {
            let text = e.payload.get("delta").or_else(|| e.payload.get("text"));
            (e.id.as_str(), e.turn, e.ts, text.unwrap_or(&Value::Null))
        })
        .collect();
    assert_eq!(
        got,
        [
            ("2", Some(1), Some(1001.0), &json!("ab")),
            ("3", Some(2), Some(1002.0), &json!("c")),
            ("5", Some(2), None, &json!("xy")),
        ]
    );
}

/// One generated input: a delta of message `m{0|1}` / part `p{0|1}`, or another event.
#[derive(Debug, Clone)]
enum Step {
    Delta { message: u8, part: u8, text: String },
    Other(&'static str),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..2, 0u8..2, "[a-z ]{0,4}")
            .prop_map(|(message, part, text)| Step::Delta { message, part, text }),
        1 => prop::sample::select(vec![
            "message.part.updated",
            "permission.asked",
            "session.idle",
            "session.status",
        ])
        .prop_map(Step::Other),
    ]
}

fn raw(engine: Engine, i: usize, s: &Step) -> EngineEvent {
    let id = format!("e{i}");
    match (engine, s) {
        (Engine::Kilo, Step::Delta { message, part, text }) => event(
            &id,
            "message.part.delta",
            None,
            None,
            json!({"messageID": format!("m{message}"), "partID": format!("p{part}"),
                   "field": "text", "delta": text}),
        ),
        (_, Step::Delta { message, part, text }) => event(
            &id,
            if *part == 0 { "assistant.message.delta" } else { "assistant.reasoning.delta" },
            Some(1),
            None,
            json!({"message_id": format!("m{message}"), "delta": text}),
        ),
        (_, Step::Other(kind)) => event(&id, kind, None, None, json!({"sessionID": "s"})),
    }
}

/// Text per delta stream (type + message + part), in order.
fn texts(events: &[EngineEvent]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for e in events {
        let Some(text) = e.payload.get("delta").and_then(Value::as_str) else { continue };
        let key = format!(
            "{}/{}/{}",
            e.event_type,
            e.payload
                .get("messageID")
                .or_else(|| e.payload.get("message_id"))
                .unwrap_or(&Value::Null),
            e.payload.get("partID").unwrap_or(&Value::Null)
        );
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, t)) => t.push_str(text),
            None => out.push((key, text.to_owned())),
        }
    }
    out
}

proptest! {
    /// Whatever the mix of deltas, other events and waits: each delta stream's text is the
    /// raw text, non-delta events all arrive once in order, every id the webview sees is an
    /// engine id in engine order, and the last one is the engine's last.
    #[test]
    fn coalescing_keeps_text_order_and_ids(
        kilo in any::<bool>(),
        steps in prop::collection::vec((step(), 0u64..50), 1..120),
    ) {
        let engine = if kilo { Engine::Kilo } else { Engine::BreadBoard };
        let c = clock();
        let mut h = ready_host_of(engine, HostConfig::default(), &c);
        h.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
        h.handle(Input::select(0, "s"), c.now());
        drain(&mut h);
        let mut sent = Vec::new();
        let mut got = Vec::new();
        for (i, (s, wait)) in steps.iter().enumerate() {
            let e = raw(engine, i, s);
            sent.push(e.clone());
            h.handle(super::events_in(&h, "s", vec![e]), c.now());
            c.advance(Duration::from_millis(*wait));
            h.handle_timeout(c.now());
            got.extend(events_of(drain(&mut h)));
        }
        got.extend(events_of(run_to_idle(&mut h, &c)));
        prop_assert_eq!(texts(&got), texts(&sent));
        let others = |v: &[EngineEvent]| -> Vec<String> {
            v.iter().filter(|e| !e.event_type.ends_with(".delta")).map(|e| e.id.to_string()).collect()
        };
        prop_assert_eq!(others(&got), others(&sent));
        let position = |id: &str| sent.iter().position(|e| e.id == id);
        let positions: Vec<Option<usize>> = got.iter().map(|e| position(&e.id)).collect();
        prop_assert!(positions.iter().all(Option::is_some));
        prop_assert!(positions.windows(2).all(|w| w[0] < w[1]));
        prop_assert_eq!(got.last().map(|e| &e.id), sent.last().map(|e| &e.id));
    }
}
