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
    let input = Input::PromptRaised {
        prompt: Box::new(prompt),
        event: Some(Box::new((event, EventClass::PermissionRequest))),
    };
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
    h.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
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

/// After a restart, the resumed stream replays from the saved position, which may lie before
/// an earlier request of the id a restored prompt has (BreadBoard's `permission_1` of the turn
/// before): that request and its answer come again. The answer is the earlier request's: the
/// restored prompt stays open and its answer reaches the engine (it was taken for the
/// restored prompt, which then refused the user's answer as already answered while the engine
/// waited on it: a turn stuck for good).
#[test]
fn a_replayed_answer_to_an_earlier_request_of_its_id_does_not_settle_a_restored_prompt() {
    let c = clock();
    let config = || HostConfig { trusted: true, ..HostConfig::default() };
    let mut h = Host::new(Engine::BreadBoard, config());
    h.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
    raise(&mut h, &c, "7");
    h.handle(settle("8"), c.now());
    raise(&mut h, &c, "12");
    run_to_idle(&mut h, &c);
    let saved = h.take_saved().expect("the open prompt");
    assert_eq!(saved.len(), 1);

    // The bridge is killed; the restarted one shows the prompt again, then its stream
    // resumes from a position before event 7.
    let mut h2 = Host::new(Engine::BreadBoard, config());
    h2.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
    h2.handle(Input::ready(0), c.now());
    let select = Input::SessionSelected { conn: 0, session_id: "s".into(), tab_id: None };
    h2.handle(select, c.now());
    h2.handle(Input::PromptsRestored(saved.clone()), c.now());
    raise(&mut h2, &c, "7");
    h2.handle(settle("8"), c.now());
    raise(&mut h2, &c, "12");
    run_to_idle(&mut h2, &c);
    h2.answers_card("s", "permission_1", Some("12")).expect("the card on show");
    h2.begin_answer_from(0, "s", "permission_1", Verdict::Allow, "allow_once")
        .expect("still pending: the replayed answer was the earlier request's");
    // Its own answer, when the engine sends it, settles it.
    h2.handle(settle("13"), c.now());
    let late = h2.begin_answer("s", "permission_1", Verdict::Deny).unwrap_err();
    assert!(late.to_string().contains("already answered"), "{late}");

    // The same through a primed stream: the events at or before the resume position are read
    // again to rebuild state, not shown (a request without its event, a settling without
    // its event). The soak's stuck turns on the stdio sidecar were this case.
    let mut h3 = Host::new(Engine::BreadBoard, config());
    h3.handle(Input::SessionUpserted(Box::new(summary("s"))), c.now());
    h3.handle(Input::PromptsRestored(saved.clone()), c.now());
    let prompt = Prompt::new("s", "permission_1", PromptKind::Exec);
    h3.handle(
        Input::PromptReplayed { prompt: Box::new(prompt.clone()), event_id: "7".into() },
        c.now(),
    );
    let unshown = Input::PromptSettled {
        session_id: "s".into(),
        request_id: "permission_1".into(),
        event: None,
    };
    h3.handle(unshown, c.now());
    // The restored request's own event, replayed: the same request, still open.
    h3.handle(Input::PromptReplayed { prompt: Box::new(prompt), event_id: "12".into() }, c.now());
    run_to_idle(&mut h3, &c);
    h3.begin_answer("s", "permission_1", Verdict::Allow).expect("still pending after the replay");
}

/// The engine's `permission_response` to `permission_1`, as event `event_id`.
fn settle(event_id: &str) -> Input {
    let payload = json!({"request_id": "permission_1", "decision": "allow_once"});
    let event = event_of(event_id, "permission_response", payload);
    Input::PromptSettled {
        session_id: "s".into(),
        request_id: "permission_1".into(),
        event: Some(Box::new((event, EventClass::PermissionResponse))),
    }
}
