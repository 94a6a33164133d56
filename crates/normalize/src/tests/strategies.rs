//! Proptest generators: event streams of both engines built from the real event shapes,
//! with small id pools so events collide on messages, calls, requests and tasks.

use bb_protocol::v1::EventId;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::event::{Engine, RawEvent};

/// Any JSON value, nested a few levels.
pub(super) fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("m1"),
            Just("c1"),
            Just("t1"),
            Just("running"),
            Just("failed"),
            Just("text"),
            Just("tool")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("id".to_owned()),
                    Just("item_id".to_owned()),
                    Just("message_id".to_owned()),
                    Just("call_id".to_owned()),
                    Just("task_id".to_owned()),
                    Just("parent_task_id".to_owned()),
                    Just("status".to_owned()),
                    Just("text".to_owned()),
                    Just("delta".to_owned()),
                    Just("part".to_owned()),
                    Just("info".to_owned()),
                    Just("state".to_owned()),
                    Just("request_id".to_owned()),
                    Just("todo".to_owned()),
                    Just("items".to_owned()),
                    Just("type".to_owned()),
                    Just("messageID".to_owned()),
                    Just("partID".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn pick(n: usize, prefix: &'static str) -> impl Strategy<Value = String> {
    (0..n).prop_map(move |i| format!("{prefix}{i}"))
}

fn text() -> impl Strategy<Value = String> {
    "[a-z \\n]{0,12}"
}

/// One BreadBoard event of a realistic shape.
pub(super) fn bb_event() -> impl Strategy<Value = RawEvent> {
    let turn = prop::option::of(0i64..3);
    let body = prop_oneof![
        4 => (pick(3, "m"), text()).prop_map(|(m, t)| ("assistant.message.delta", json!({"item_id": m, "delta": t}))),
        3 => (prop::option::of(pick(2, "m")), text()).prop_map(|(m, t)| ("assistant_delta", json!({"message_id": m, "text": t}))),
        1 => pick(3, "m").prop_map(|m| ("assistant.message.start", json!({"item_id": m}))),
        1 => pick(3, "m").prop_map(|m| ("assistant.message.end", json!({"item_id": m}))),
        1 => (prop::option::of(pick(3, "m")), text()).prop_map(|(m, t)| ("assistant_message", json!({"message_id": m, "text": t}))),
        2 => text().prop_map(|t| ("assistant.reasoning.delta", json!({"delta": t}))),
        1 => text().prop_map(|t| ("user_message", json!({"text": t}))),
        1 => (prop::option::of(pick(3, "c")), pick(2, "tool")).prop_map(|(c, t)| ("tool_call", json!({"call_id": c, "tool": t, "call": {"function": {"name": t, "arguments": "{}"}}}))),
        1 => (prop::option::of(pick(3, "c")), pick(2, "tool"), any::<bool>()).prop_map(|(c, t, ok)| ("tool_result", json!({"call_id": c, "tool": t, "status": if ok {"ok"} else {"error"}, "error": !ok, "result": "out"}))),
        1 => (pick(2, "c"), text()).prop_map(|(c, t)| ("tool.exec.stdout.delta", json!({"exec_id": c, "delta": t}))),
        1 => pick(2, "p").prop_map(|r| ("permission_request", json!({"request_id": r, "tool": "bash", "kind": "run"}))),
        1 => pick(3, "p").prop_map(|r| ("permission_response", json!({"request_id": r, "decision": "once"}))),
        1 => (pick(4, "t"), prop::option::of(pick(4, "t")), prop_oneof![Just("queued"), Just("running"), Just("completed"), Just("failed")])
            .prop_map(|(t, p, s)| ("task_event", json!({"task_id": t, "parent_task_id": p, "status": s}))),
        1 => Just(("run_finished", json!({"completed": true, "reason": "done"}))),
        1 => Just(("completion", json!({"summary": {"completed": false, "reason": "stopped"}}))),
        1 => Just(("turn_start", json!({"turn": 1}))),
        1 => Just(("stream.gap", json!({"reason": "gap"}))),
        1 => Just(("error", json!({"message": "boom"}))),
        1 => Just(("checkpoint_list", json!({"checkpoints": [{"checkpoint_id": "k1"}]}))),
        1 => Just(("checkpoint_restored", json!({"checkpoint_id": "k1"}))),
        1 => Just(("log_link", json!({"url": "file://x"}))),
        1 => any_json().prop_map(|p| ("mystery.event", p)),
    ];
    (body, turn, prop::option::of("[a-f0-9]{6}"), prop::option::of(0u64..100)).prop_map(
        |((kind, payload), turn, id, seq)| RawEvent {
            id: id.map(EventId::from),
            engine: Engine::BreadBoard,
            kind: kind.to_owned().into(),
            session_id: Some("s".to_owned()),
            seq,
            turn,
            ts: None,
            payload: payload.into(),
        },
    )
}

/// One Kilo event of a realistic shape.
pub(super) fn kilo_event() -> impl Strategy<Value = RawEvent> {
    let body = prop_oneof![
        4 => (pick(2, "m"), pick(3, "prt"), text()).prop_map(|(m, p, t)| ("message.part.delta", json!({"messageID": m, "partID": p, "field": "text", "delta": t}))),
        2 => (pick(2, "m"), pick(3, "prt"), text(), prop_oneof![Just("text"), Just("reasoning")]).prop_map(|(m, p, t, ty)| ("message.part.updated", json!({"part": {"id": p, "messageID": m, "type": ty, "text": t}}))),
        1 => (pick(3, "m"), prop_oneof![Just("user"), Just("assistant")]).prop_map(|(m, r)| ("message.updated", json!({"info": {"id": m, "role": r}}))),
        1 => (pick(2, "c"), prop_oneof![Just("pending"), Just("running"), Just("completed"), Just("error")]).prop_map(|(c, s)| ("message.part.updated", json!({"part": {"id": c, "callID": c, "messageID": "m0", "type": "tool", "tool": "bash", "state": {"status": s, "output": "o", "error": "e"}}}))),
        1 => pick(2, "per").prop_map(|r| ("permission.asked", json!({"id": r, "permission": "bash", "patterns": ["ls"]}))),
        1 => pick(2, "per").prop_map(|r| ("permission.replied", json!({"requestID": r, "reply": "once"}))),
        1 => Just(("session.idle", json!({}))),
        1 => Just(("session.status", json!({"status": {"type": "busy"}}))),
        1 => Just(("session.turn.close", json!({"reason": "completed"}))),
        1 => Just(("server.heartbeat", json!({}))),
        1 => any_json().prop_map(|p| ("mystery.event", p)),
    ];
    (body, prop::option::of("evt_[a-z0-9]{5}")).prop_map(|((kind, payload), id)| RawEvent {
        id: id.map(EventId::from),
        engine: Engine::Kilo,
        kind: kind.to_owned().into(),
        session_id: Some("ses".to_owned()),
        seq: None,
        turn: None,
        ts: None,
        payload: payload.into(),
    })
}

/// A stream of either engine.
pub(super) fn stream(max: usize) -> impl Strategy<Value = Vec<RawEvent>> {
    prop_oneof![
        prop::collection::vec(bb_event(), 0..max),
        prop::collection::vec(kilo_event(), 0..max),
    ]
}

/// Any type of either engine (including every known one) with any payload.
pub(super) fn wild_event() -> impl Strategy<Value = RawEvent> {
    let kinds = prop_oneof![
        Just("user_message"),
        Just("assistant_message"),
        Just("assistant.message.delta"),
        Just("assistant_delta"),
        Just("assistant.reasoning.delta"),
        Just("tool_call"),
        Just("tool_result"),
        Just("tool.exec.stdout.delta"),
        Just("permission_request"),
        Just("permission_response"),
        Just("checkpoint_list"),
        Just("checkpoint_restored"),
        Just("task_event"),
        Just("skills_catalog"),
        Just("skills_selection"),
        Just("ctree_node"),
        Just("ctree_snapshot"),
        Just("reward_update"),
        Just("log_link"),
        Just("limits_update"),
        Just("completion"),
        Just("run_finished"),
        Just("error"),
        Just("stream.gap"),
        Just("warning"),
        Just("turn_start"),
        Just("message.updated"),
        Just("message.part.updated"),
        Just("message.part.delta"),
        Just("permission.asked"),
        Just("permission.replied"),
        Just("question.asked"),
        Just("question.replied"),
        Just("todo.updated"),
        Just("session.status"),
        Just("session.idle"),
        Just("session.turn.open"),
        Just("session.turn.close"),
        Just("session.error"),
        Just("session.diff"),
        Just("file.edited"),
        Just("session.updated"),
        Just("whatever"),
    ];
    (kinds, any::<bool>(), any_json(), prop::option::of(-3i64..3)).prop_map(
        |(k, kilo, payload, turn)| RawEvent {
            id: Some("e".into()),
            engine: if kilo { Engine::Kilo } else { Engine::BreadBoard },
            kind: k.to_owned().into(),
            session_id: None,
            seq: None,
            turn,
            ts: None,
            payload: payload.into(),
        },
    )
}
