//! The Kilo event mapping over real captures (`fixtures/engine/kilo/*.sse` with their
//! `.meta.json`): every session event is forwarded once, in order, ids untouched; `sync`
//! echoes are not forwarded; run and permission state follow the turn.

use std::path::{Path, PathBuf};

use crate::client::KiloEvent;
use bb_engine_client::sse::{SseItem, SseParser};
use bb_normalize::class::classify_kilo;
use bb_protocol::v1::EngineEvent;
use serde_json::{Value, json};

use crate::events::KiloEventState;
use bb_host::{Input, push_merged};
use bb_service::Ingest;

/// The captures whose meta lists what is forwarded.
const CAPTURES: [&str; 6] = [
    "session_create",
    "stream_text",
    "message_sync",
    "permission_allow",
    "abort",
    "idle_heartbeat",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo")
}

/// Feeds one capture through the SSE parser and the mapping.
fn replay(name: &str) -> Vec<Input> {
    let bytes = std::fs::read(fixtures().join(format!("{name}.sse"))).unwrap();
    let mut parser = SseParser::default();
    let mut items = Vec::new();
    // Odd chunk size: events straddle chunks.
    for chunk in bytes.chunks(97) {
        parser.feed(chunk, &mut items).unwrap();
    }
    let mut state = KiloEventState::default();
    let mut updates = Vec::new();
    for item in items {
        let SseItem::Event(event) = item else { continue };
        let parsed = KiloEvent::parse(&event.data).unwrap();
        updates.extend(state.apply(parsed));
    }
    updates
}

/// What the capture's meta says should be forwarded: (session, type) of every event with a
/// session, except `sync`.
fn expected(name: &str) -> Vec<(String, String)> {
    let meta: Value = serde_json::from_slice(
        &std::fs::read(fixtures().join(format!("{name}.meta.json"))).unwrap(),
    )
    .unwrap();
    let stream = &meta["streams"][0];
    stream["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["sessionID"].is_string() && e["type"] != "sync")
        .map(|e| {
            (e["sessionID"].as_str().unwrap().to_owned(), e["type"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The events an input carries (a prompt's event included), with their session.
fn events_of(update: &Input) -> Vec<(&str, &EngineEvent)> {
    classed_of(update).into_iter().map(|(s, e, _)| (s, e)).collect()
}

/// The events an input carries, with their session and class.
fn classed_of(update: &Input) -> Vec<(&str, &EngineEvent, bb_normalize::EventClass)> {
    match update {
        Input::Events { session_id, events } => {
            events.iter().map(|(e, c)| (&**session_id, e, *c)).collect()
        }
        Input::PromptRaised { prompt, event: Some(shown) } => {
            vec![(prompt.session_id.as_str(), &shown.0, shown.1)]
        }
        Input::PromptSettled { session_id, event: Some(says), .. } => {
            vec![(session_id.as_str(), &says.0, says.1)]
        }
        _ => Vec::new(),
    }
}

fn forwarded(updates: &[Input]) -> Vec<(String, String, String)> {
    updates
        .iter()
        .flat_map(events_of)
        .map(|(session, e)| (session.to_owned(), e.event_type.to_string(), e.id.to_string()))
        .collect()
}

/// Events written as JSON, through the parser the router uses.
trait ApplyJson {
    fn apply_json(&mut self, raw: Value) -> Vec<Input>;
}

impl ApplyJson for KiloEventState {
    /// What the router does not route (not a Kilo event) never reaches the mapping.
    fn apply_json(&mut self, raw: Value) -> Vec<Input> {
        match KiloEvent::parse(&raw.to_string()) {
            Ok(event) => self.apply(event),
            Err(_) => Vec::new(),
        }
    }
}

/// The class the mapping decides from its own read of an event is the one the normalizer
/// gives the event read alone, on every capture (the host core does not classify again).
#[test]
fn the_mapping_classifies_each_event_as_the_normalizer_does() {
    let mut classified = 0;
    for name in CAPTURES {
        for update in replay(name) {
            for (_, event, class) in classed_of(&update) {
                let alone = classify_kilo(&event.event_type, &event.payload);
                assert_eq!(class, alone, "{name}: {} ({})", event.id, event.event_type);
                classified += 1;
            }
        }
    }
    assert!(classified > 100, "only {classified} events classified");
}

fn classified(session: &str, ids: &[&str]) -> Input {
    let events = ids
        .iter()
        .map(|id| {
            let event = EngineEvent {
                id: (*id).into(),
                event_type: "message.part.delta".into(),
                turn: None,
                ts: None,
                payload: json!({"sessionID": session}).into(),
            };
            (event, bb_normalize::EventClass::AssistantStream)
        })
        .collect();
    Input::Events { session_id: session.into(), events }
}

/// Adjacent classified events of one session merge into one update, in order; anything
/// else stays apart, and no merged update holds more than `MERGED_EVENTS` events.
#[test]
fn adjacent_events_of_one_session_merge() {
    let running = Input::SessionRunning { session_id: "a".into(), running: true };
    let cases: Vec<(Vec<Input>, Vec<Vec<&str>>)> = vec![
        (vec![classified("a", &["1"]), classified("a", &["2", "3"])], vec![vec!["1", "2", "3"]]),
        (vec![classified("a", &["1"]), classified("b", &["2"])], vec![vec!["1"], vec!["2"]]),
        (
            vec![classified("a", &["1"]), running.clone(), classified("a", &["2"])],
            vec![vec!["1"], vec![], vec!["2"]],
        ),
        (
            vec![classified("a", &["1"]), classified("b", &["2"]), classified("a", &["3"])],
            vec![vec!["1"], vec!["2"], vec!["3"]],
        ),
    ];
    for (updates, want) in cases {
        let mut out = Vec::new();
        for update in updates.clone() {
            push_merged(&mut out, update);
        }
        let got: Vec<Vec<&str>> = out
            .iter()
            .map(|u| events_of(u).into_iter().map(|(_, e)| e.id.as_str()).collect())
            .collect();
        assert_eq!(got, want, "{updates:?}");
    }
    let ids: Vec<String> = (0..Input::MERGED_EVENTS + 1).map(|i| i.to_string()).collect();
    let mut out = Vec::new();
    for id in &ids {
        push_merged(&mut out, classified("a", &[id]));
    }
    let sizes: Vec<usize> = out.iter().map(|u| events_of(u).len()).collect();
    assert_eq!(sizes, [Input::MERGED_EVENTS, 1]);
}

/// Every event item the webview was sent, in order.
fn sent_items(ingest: &mut Ingest) -> Vec<Value> {
    let mut items = Vec::new();
    while let Some(message) = ingest.poll_output() {
        let message = serde_json::to_value(&message).unwrap();
        if message["topic"] == "bb/events" {
            items.extend(message["payload"]["events"].as_array().unwrap().iter().cloned());
        }
    }
    items
}

/// Adjacent deltas of one part folded into one, as the host core coalesces them (the last
/// one's fields, the texts joined): the items a webview shows whatever the batching was.
fn folded(items: Vec<Value>) -> Vec<Value> {
    let key = |item: &Value| {
        (item["type"] == "message.part.delta").then(|| {
            let p = &item["payload"];
            (p["messageID"].clone(), p["partID"].clone(), p["field"].clone())
        })
    };
    let mut out: Vec<Value> = Vec::new();
    for mut item in items {
        if let Some(last) = out.last_mut()
            && key(last).is_some()
            && key(last) == key(&item)
        {
            let text = format!(
                "{}{}",
                last["payload"]["delta"].as_str().unwrap(),
                item["payload"]["delta"].as_str().unwrap()
            );
            item["payload"]["delta"] = text.into();
            *last = item;
        } else {
            out.push(item);
        }
    }
    out
}

/// A merged update applies as the updates it holds did: on every capture, fed a few
/// updates at a time (as the pump takes them from the router), the webview is sent the same
/// items, in the same order, with or without merging; only where messages split differs.
#[test]
fn merged_updates_send_what_the_updates_sent() {
    let mut sent = 0;
    for name in CAPTURES {
        let updates = replay(name);
        // Any instant: only the steps from it matter.
        let start = bb_host::Clock::now(&bb_service::SystemClock);
        let config = bb_host::HostConfig::default();
        let (mut one_by_one, mut merged) = (
            Ingest::new(bb_protocol::v1::EngineKind::Kilo, config, start),
            Ingest::new(bb_protocol::v1::EngineKind::Kilo, config, start),
        );
        let (mut apart, mut together) = (Vec::new(), Vec::new());
        let mut now = start;
        for batch in updates.chunks(5) {
            now += std::time::Duration::from_millis(7);
            let mut out = Vec::new();
            for update in batch {
                one_by_one.engine_input(update.clone(), now);
                push_merged(&mut out, update.clone());
            }
            for update in out {
                merged.engine_input(update, now);
            }
            one_by_one.tick(now);
            merged.tick(now);
            apart.extend(sent_items(&mut one_by_one));
            together.extend(sent_items(&mut merged));
        }
        now += std::time::Duration::from_secs(10);
        one_by_one.tick(now);
        merged.tick(now);
        apart.extend(sent_items(&mut one_by_one));
        together.extend(sent_items(&mut merged));
        sent += apart.len();
        assert_eq!(folded(apart), folded(together), "{name}");
    }
    assert!(sent > 100, "only {sent} items sent");
}

#[test]
fn every_capture_forwards_each_session_event_once_in_order() {
    for name in CAPTURES {
        let updates = replay(name);
        let got = forwarded(&updates);
        let want = expected(name);
        let got_pairs: Vec<(String, String)> =
            got.iter().map(|(s, t, _)| (s.clone(), t.clone())).collect();
        assert_eq!(got_pairs, want, "{name}");
        // Ids are Kilo's own, each once.
        let mut ids: Vec<&str> = got.iter().map(|(_, _, id)| id.as_str()).collect();
        assert!(ids.iter().all(|id| id.starts_with("evt_")), "{name}: {ids:?}");
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "{name}: duplicate ids forwarded");
        assert!(
            !updates.iter().any(|u| matches!(u, Input::Gap { .. })),
            "{name}: a gap in a contiguous capture"
        );
    }
}

fn running_flags(updates: &[Input]) -> Vec<bool> {
    updates
        .iter()
        .filter_map(|u| match u {
            Input::SessionRunning { running, .. } => Some(*running),
            _ => None,
        })
        .collect()
}

#[test]
fn a_turn_runs_then_ends_idle() {
    for name in ["stream_text", "abort"] {
        let flags = running_flags(&replay(name));
        assert!(flags.contains(&true), "{name}: never running");
        assert_eq!(flags.last(), Some(&false), "{name}: not idle at the end");
    }
}

#[test]
fn a_permission_is_raised_then_settled() {
    let prompts: Vec<String> = replay("permission_allow")
        .iter()
        .filter_map(|u| match u {
            Input::PromptRaised { prompt, event: Some(_) } => {
                Some(format!("raised {} {:?}", prompt.request_id, prompt.kind))
            }
            Input::PromptSettled { request_id, event: Some(_), .. } => {
                Some(format!("settled {request_id}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert!(prompts[0].starts_with("raised per_") && prompts[0].ends_with("Exec"), "{prompts:?}");
    assert!(prompts[1].starts_with("settled per_"), "{prompts:?}");
}

#[test]
fn sessions_are_upserted_from_their_events() {
    let updates = replay("session_create");
    let upserted = updates.iter().find_map(|u| match u {
        Input::SessionUpserted(s) => Some(s.clone()),
        _ => None,
    });
    let s = upserted.expect("a session upsert");
    assert!(s.session_id.starts_with("ses_"));
    assert!(s.title.is_some() && s.updated_at.is_some());
}

#[test]
fn a_sync_sequence_jump_is_a_gap() {
    let sync = |seq: u64| json!({"type": "sync", "id": format!("evt_{seq}"), "syncEvent": {"aggregateID": "ses_a", "seq": seq, "type": "message.updated.1", "data": {}}});
    let mut state = KiloEventState::default();
    assert!(state.apply_json(sync(0)).is_empty());
    assert!(state.apply_json(sync(1)).is_empty());
    assert_eq!(state.apply_json(sync(3)), [Input::Gap { session_id: Some("ses_a".into()) }]);
    // After a reconnect the sequence starts over without a false gap.
    state.reset_stream();
    assert!(state.apply_json(sync(9)).is_empty());
    // A jump to the top of the range is a gap; repeating the top value is neither a gap nor
    // an overflow.
    assert_eq!(state.apply_json(sync(u64::MAX)).len(), 1);
    assert!(state.apply_json(sync(u64::MAX)).is_empty());
}

/// Interleaved sessions' events each share their session's one id (the stream does not
/// bring a session's events together), a sync echo's included; a deleted session's is
/// forgotten, and a reconnect forgets sequence numbers, not the ids.
#[test]
fn each_sessions_inputs_share_one_session_id() {
    let delta = |session: &str, n: u32| json!({"type": "message.part.delta", "id": format!("evt_{n}"), "properties": {"sessionID": session, "messageID": "msg_1", "partID": "prt_1", "field": "text", "delta": "x"}});
    let sync = |session: &str, seq: u64| json!({"type": "sync", "id": format!("evt_s{seq}"), "syncEvent": {"aggregateID": session, "seq": seq, "type": "message.part.delta.1", "data": {}}});
    let mut state = KiloEventState::default();
    let shared = |state: &mut KiloEventState, raw: Value| -> std::sync::Arc<str> {
        match state.apply_json(raw).as_slice() {
            [Input::Events { session_id, .. }] => session_id.clone(),
            other => panic!("one event input, not {other:?}"),
        }
    };
    let a = shared(&mut state, delta("ses_a", 1));
    let b = shared(&mut state, delta("ses_b", 2));
    assert!(!std::sync::Arc::ptr_eq(&a, &b));
    assert!(state.apply_json(sync("ses_c", 1)).is_empty());
    for n in 3..6 {
        assert!(std::sync::Arc::ptr_eq(&a, &shared(&mut state, delta("ses_a", n))));
        assert!(std::sync::Arc::ptr_eq(&b, &shared(&mut state, delta("ses_b", n))));
    }
    let c = shared(&mut state, delta("ses_c", 6));
    assert_eq!(&*c, "ses_c");
    state.reset_stream();
    assert!(std::sync::Arc::ptr_eq(&a, &shared(&mut state, delta("ses_a", 7))));
    assert!(std::sync::Arc::ptr_eq(&c, &shared(&mut state, delta("ses_c", 8))));
    let deleted = json!({"type": "session.deleted", "id": "evt_9", "properties": {"info": {"id": "ses_a", "sessionID": "ses_a"}}});
    state.apply_json(deleted);
    assert!(!std::sync::Arc::ptr_eq(&a, &shared(&mut state, delta("ses_a", 10))));
}

#[test]
fn odd_events_are_never_a_panic() {
    let mut state = KiloEventState::default();
    for raw in [
        json!(null),
        json!([1, 2]),
        json!({"type": 3}),
        json!({"type": "session.status", "properties": {"sessionID": "ses_a"}}),
        json!({"type": "permission.asked", "properties": {"sessionID": "ses_a"}}),
        json!({"type": "session.updated", "properties": {"sessionID": "ses_a", "info": {"title": 1}}}),
        json!({"type": "sync"}),
        json!({"type": "x.y", "properties": "not an object"}),
    ] {
        let _ = state.apply_json(raw);
    }
    // An event of an unknown type with a session is forwarded as is.
    let out = state.apply_json(
        json!({"id": "evt_z", "type": "brand.new", "properties": {"sessionID": "ses_b", "k": 1}}),
    );
    assert_eq!(forwarded(&out), [("ses_b".to_owned(), "brand.new".to_owned(), "evt_z".to_owned())]);
}

/// The session is read where the router once looked for it (`sessionID`, else `info`'s, else
/// `part`'s): an event naming it only in `info` or `part` is forwarded (the mapping used to
/// read `sessionID` alone and drop it); one naming none is counted as unrouted, not sent.
#[test]
fn the_session_is_read_from_the_body_once_and_an_event_of_none_is_counted() {
    let shared = std::sync::Arc::new(crate::shared::Shared::default());
    let mut state = KiloEventState::new(shared.clone());
    let info = json!({"id": "evt_i", "type": "message.updated", "properties":
        {"info": {"id": "msg_1", "sessionID": "ses_i", "role": "user"}}});
    let part = json!({"id": "evt_p", "type": "message.part.updated", "properties":
        {"part": {"id": "prt_1", "sessionID": "ses_p", "type": "text"}}});
    let out: Vec<Input> = [info, part].into_iter().flat_map(|e| state.apply_json(e)).collect();
    let sent: Vec<_> = forwarded(&out).into_iter().map(|(s, _, id)| (s, id)).collect();
    assert_eq!(
        sent,
        [("ses_i".to_owned(), "evt_i".to_owned()), ("ses_p".to_owned(), "evt_p".to_owned())]
    );
    let unrouted = std::sync::atomic::Ordering::Relaxed;
    for none in [
        json!({"type": "plugin.added", "properties": {"meta": {"sessionID": "deeper"}}}),
        json!({"type": "x", "properties": {"sessionID": ""}}),
        json!({"type": "sync", "syncEvent": {"seq": 3}}),
    ] {
        let before = shared.unrouted.load(unrouted);
        assert_eq!(state.apply_json(none.clone()), Vec::new(), "{none}");
        assert_eq!(shared.unrouted.load(unrouted), before + 1, "{none}");
    }
}

/// `GET /global/event` wraps each event: the wrapped event is mapped as the bare one (the
/// mapping used to see the wrapper, no `type`, and dropped it).
#[test]
fn a_wrapped_event_is_mapped_as_the_bare_one() {
    let bare = json!({"id": "evt_w", "type": "message.part.delta", "properties":
        {"sessionID": "ses_w", "messageID": "msg_1", "partID": "prt_1", "field": "text", "delta": "hi"}});
    let wrapped = json!({"directory": "/p", "project": "global", "payload": bare.clone()});
    let out = KiloEventState::default().apply_json(wrapped);
    assert_eq!(out, KiloEventState::default().apply_json(bare));
    assert_eq!(
        forwarded(&out),
        [("ses_w".to_owned(), "message.part.delta".to_owned(), "evt_w".to_owned())]
    );
}

/// `ts` and `turn` come from the event only: a table of the shapes Kilo sends.
#[test]
fn ts_and_turn_come_from_the_event_only() {
    let cases = [
        (json!({"time": 1795306889837_u64}), Some(1_795_306_889_837.0), None),
        (json!({"part": {"time": {"start": 10, "end": 20}}}), Some(20.0), None),
        (json!({"part": {"time": {"start": 10}}}), Some(10.0), None),
        (json!({"part": {"state": {"time": {"start": 10}}}}), None, None),
        (json!({"info": {"time": {"created": 5, "completed": 9}}}), Some(9.0), None),
        (json!({"info": {"time": {"created": 5, "updated": 7}}}), Some(7.0), None),
        (json!({"info": {"time": {"created": 5}}}), Some(5.0), None),
        (json!({"info": {"time": {"elapsed": 173}}}), None, None),
        (json!({"time": -1, "turn": 3}), None, Some(3)),
        (json!({"delta": "x", "turn": "3"}), None, None),
    ];
    for (props, ts, turn) in cases {
        let mut p = props.as_object().cloned().unwrap();
        p.insert("sessionID".into(), json!("ses_1"));
        let raw = json!({"id": "evt_1", "type": "x.y", "properties": p});
        let updates = KiloEventState::default().apply_json(raw);
        let Some((_, event)) = updates.first().and_then(|u| events_of(u).first().copied()) else {
            panic!("no event for {props}")
        };
        assert_eq!((event.ts, event.turn), (ts, turn), "{props}");
    }
}

/// In a real capture every `message.updated`, `session.updated` and `message.part.updated`
/// carries a time; deltas carry none.
#[test]
fn captured_events_get_their_engine_time() {
    let updates = replay("stream_text");
    let mut timed = 0;
    for (_, e) in updates.iter().flat_map(events_of) {
        match &*e.event_type {
            "message.updated" | "session.updated" | "message.part.updated" => {
                assert!(e.ts.is_some_and(|t| t > 1.7e12), "{} has no time", e.id);
                timed += 1;
            }
            "message.part.delta" => assert_eq!(e.ts, None),
            _ => {}
        }
        assert_eq!(e.turn, None);
    }
    assert!(timed > 0);
}

fn types(updates: &[Input]) -> Vec<String> {
    forwarded(updates).into_iter().map(|(_, t, _)| t).collect()
}

/// An unknown event type while a permission of its session is open fails the turn closed:
/// the event is kept (forwarded, classified `unknown_event`), a `bb.turn.failed` with a Retry
/// follows, the session's prompts are withdrawn (the host has the engine deny them) and the
/// turn aborted. Outside a flow the same type is only forwarded.
#[test]
fn an_unknown_event_during_a_permission_fails_the_turn_closed() {
    use crate::events::Action;
    let mut state = KiloEventState::default();
    let unknown = |id: &str| json!({"id": id, "type": "permission.v3.asked", "properties": {"sessionID": "ses_a"}});
    assert_eq!(types(&state.apply_json(unknown("evt_0"))), ["permission.v3.asked"]);
    assert!(state.take_actions().is_empty());

    let asked = json!({"id": "evt_1", "type": "permission.asked",
        "properties": {"id": "per_1", "sessionID": "ses_a", "permission": "bash"}});
    // Raised to the host, which shows it once (a repeat is the host's to drop).
    for _ in 0..2 {
        let raised = state.apply_json(asked.clone());
        assert!(
            matches!(&raised[0], Input::PromptRaised { prompt, .. } if prompt.request_id == "per_1")
        );
    }
    let out = state.apply_json(unknown("evt_2"));
    assert_eq!(types(&out), ["permission.v3.asked", crate::TURN_FAILED_EVENT]);
    let failed = out
        .iter()
        .flat_map(events_of)
        .find_map(|(_, e)| (e.event_type == crate::TURN_FAILED_EVENT).then_some(&e.payload))
        .unwrap();
    assert_eq!(failed["retry"]["command"], "retry");
    assert_eq!(failed["eventType"], "permission.v3.asked");
    assert!(out.contains(&Input::PromptsCancelled { session_id: "ses_a".into() }), "{out:?}");
    assert_eq!(state.take_actions(), [Action::Abort("ses_a".into())]);

    // A running tool call is a flow too.
    let tool = json!({"id": "evt_3", "type": "message.part.updated", "properties": {"sessionID": "ses_b",
        "part": {"type": "tool", "callID": "call_1", "state": {"status": "running"}}}});
    state.apply_json(tool);
    let out = state.apply_json(
        json!({"id": "evt_4", "type": "tool.v9", "properties": {"sessionID": "ses_b"}}),
    );
    assert_eq!(types(&out), ["tool.v9", crate::TURN_FAILED_EVENT]);
    assert_eq!(state.take_actions(), [Action::Abort("ses_b".into())]);
}
