//! An answer names the card it answers: an engine that gives a later request the id of an
//! earlier one (BreadBoard numbers them per run: every turn's first is `permission_1`) must
//! not have a late answer to the earlier card taken for the later request.

use bb_normalize::EventClass;
use bb_protocol::v1::{Receive, V1Topic};
use serde_json::{Value, json};

use super::{clock, event_of, run_to_idle, summary};
use crate::prompts::{AnswerOutcome, Verdict};
use crate::{Clock, Engine, FakeClock, Host, HostConfig, Input, Prompt, PromptKind};

fn raise(h: &mut Host, c: &FakeClock, event_id: &str) {
    let payload = json!({"request_id": "permission_1", "tool": "bash", "kind": "run"});
    let event = event_of(event_id, "permission_request", payload);
    let prompt = Prompt::new("s", "permission_1", PromptKind::Exec);
    let input = Input::PromptRaised { prompt, event: Some((event, EventClass::PermissionRequest)) };
    h.handle(input, c.now());
}

/// The `eventId` of every `permissionRequest` update sent, in order.
fn card_events(out: &[V1Topic]) -> Vec<String> {
    fn walk(v: &Value, found: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if map.contains_key("permissionId")
                    && let Some(id) = map.get("eventId").and_then(Value::as_str)
                    && found.last().is_none_or(|last| last != id)
                {
                    found.push(id.to_owned());
                }
                map.values().for_each(|v| walk(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    for topic in out {
        if let V1Topic::Events(p) = topic {
            walk(&serde_json::to_value(p).unwrap(), &mut found);
        }
    }
    found
}

#[test]
fn a_late_answer_to_an_earlier_card_is_not_taken_for_a_later_request_of_its_id() {
    let c = clock();
    let mut h =
        Host::new(Engine::BreadBoard, HostConfig { trusted: true, ..HostConfig::default() });
    h.handle(Input::SessionUpserted(summary("s")), c.now());
    h.handle(Input::Receive { conn: 0, receive: Receive::Updates }, c.now());
    for (conn, tab) in [(0, "tab-a"), (1, "tab-b")] {
        h.handle(Input::ready(conn), c.now());
        h.handle(
            Input::SessionSelected { conn, session_id: "s".into(), tab_id: Some(tab.into()) },
            c.now(),
        );
    }
    raise(&mut h, &c, "7");
    let out = run_to_idle(&mut h, &c);
    assert_eq!(card_events(&out), ["7"], "the card names the event that showed it");

    // Window a answers the card; the engine takes it.
    h.answers_card("s", "permission_1", Some("7")).unwrap();
    h.begin_answer_from(0, "s", "permission_1", Verdict::Allow, "allow_once").unwrap();
    let done = Input::PromptAnswered {
        session_id: "s".into(),
        request_id: "permission_1".into(),
        outcome: AnswerOutcome::Accepted,
    };
    h.handle(done, c.now());
    // The next turn asks again with the same request id.
    raise(&mut h, &c, "12");
    let out = run_to_idle(&mut h, &c);
    assert_eq!(card_events(&out), ["7", "12"], "the first card resolved, the new one shown");

    // Window b's answer to the first card arrives now: refused, not taken for the new one.
    let late = h.answers_card("s", "permission_1", Some("7")).unwrap_err();
    assert_eq!(late.code(), "permission_not_pending");
    assert!(late.to_string().contains("an earlier request of this id"), "{late}");
    // An answer to the card on show is taken; one that names no card goes to the open one.
    assert!(h.answers_card("s", "permission_1", Some("12")).is_ok());
    assert!(h.answers_card("s", "permission_1", None).is_ok());
    h.begin_answer_from(1, "s", "permission_1", Verdict::Deny, "deny").unwrap();
    // A request no longer open: the card check leaves the refusal to `begin_answer`.
    assert!(h.answers_card("s", "permission_2", Some("7")).is_ok());
}
