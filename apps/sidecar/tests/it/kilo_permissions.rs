//! Permissions and questions on the real Kilo server through `bb-sidecar`: trust, deny,
//! allow once, allow rule, a second answer, stop with a request pending, a question; each
//! request shown exactly once and `pendingPermissionCount` following the open set; a request
//! nobody answers expiring with `--permission-timeout`.

use serde_json::{Value, json};

use crate::harness::{LONG, Sidecar, asked};
use crate::kilo::Kilo;

fn error_code(res: &Value) -> String {
    assert_eq!(res["ok"], false, "expected an error: {res}");
    res["error"]["code"].as_str().unwrap().to_owned()
}

fn approve(sidecar: &mut Sidecar, session: &str, request: &str, decision: &str) -> Value {
    sidecar.call(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": decision}),
    )
}

fn count(sidecar: &mut Sidecar, n: u64) {
    sidecar.state(LONG, &format!("pendingPermissionCount {n}"), |s| {
        s["pendingPermissionCount"].as_u64().unwrap_or(0) == n
    });
}

/// How often each `permission.asked` / `question.asked` id was delivered.
fn shown_ids(seen: &[String], event_type: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for line in seen {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if v["topic"] != "bb/events" {
            continue;
        }
        for e in v["payload"]["events"].as_array().into_iter().flatten() {
            if e["type"] == event_type {
                ids.push(e["payload"]["id"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    ids
}

/// Untrusted: approving bash is refused and the request stays pending; deny works; a second
/// answer is `permission_not_pending`. Trusted through `bb.init`: allow once runs the command,
/// allow rule too. Every request is shown once.
#[test]
fn trust_deny_allow_once_allow_rule_and_a_second_answer() {
    let Some(mut k) = Kilo::start() else { return };
    let session = k.create_session();

    k.send(&session, "Run it MOCK:bash:echo%20first41");
    let first = asked(&mut k.sidecar, &session, "permission.asked");
    count(&mut k.sidecar, 1);
    let refused = approve(&mut k.sidecar, &session, &first, "allow_once");
    assert_eq!(error_code(&refused), "workspace_untrusted", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("--trusted"));
    let refused = approve(&mut k.sidecar, &session, &first, "allow_rule");
    assert_eq!(error_code(&refused), "workspace_untrusted");
    count(&mut k.sidecar, 1);
    k.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": first, "decision": "deny"}),
    );
    let again = approve(&mut k.sidecar, &session, &first, "deny");
    assert_eq!(error_code(&again), "permission_not_pending", "{again}");
    k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    count(&mut k.sidecar, 0);

    // The extension host trusts the workspace.
    k.sidecar.ok("bb.init", json!({"workspaceTrusted": true}));
    k.send(&session, "Run it MOCK:bash:echo%20second42");
    let second = asked(&mut k.sidecar, &session, "permission.asked");
    count(&mut k.sidecar, 1);
    k.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": second, "decision": "allow_once"}),
    );
    let events = k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    let ran = events.iter().any(|e| {
        e["type"] == "message.part.updated"
            && e["payload"]["part"]["state"]["status"] == "completed"
            && e["payload"]["part"]["state"]["output"].as_str().unwrap_or("").contains("second42")
    });
    assert!(ran, "the approved command did not run");
    let again = approve(&mut k.sidecar, &session, &second, "allow_once");
    assert_eq!(error_code(&again), "permission_not_pending");

    k.send(&session, "Run it MOCK:bash:echo%20third43");
    let third = asked(&mut k.sidecar, &session, "permission.asked");
    k.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": third, "decision": "allow_rule"}),
    );
    k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    count(&mut k.sidecar, 0);

    let mut ids = shown_ids(&k.sidecar.seen, "permission.asked");
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!((n, ids.len()), (3, 3), "each request shown exactly once: {ids:?}");
    k.finish();
}

/// `bb.stop` with a permission pending cancels it (engine told `reject`), the count drops
/// to 0 and a late answer is `permission_not_pending`. A question from the engine's question
/// tool is answered through `bb.command question.reply`, once.
#[test]
fn stop_cancels_a_pending_permission_and_a_question_is_answered_once() {
    let Some(mut k) = Kilo::start_with("ask", &["--trusted"]) else { return };
    let session = k.create_session();
    k.send(&session, "Run it MOCK:bash:echo%20stopped44");
    let request = asked(&mut k.sidecar, &session, "permission.asked");
    count(&mut k.sidecar, 1);
    k.sidecar.ok("bb.stop", json!({"sessionId": session}));
    count(&mut k.sidecar, 0);
    let late = approve(&mut k.sidecar, &session, &request, "allow_once");
    assert_eq!(error_code(&late), "permission_not_pending", "{late}");
    k.sidecar.session_events_until(&session, "permission.replied", LONG);

    let args = "%7B%22questions%22:%5B%7B%22question%22:%22Pick%20one%22,%22header%22:%22Pick%22,\
                %22options%22:%5B%7B%22label%22:%22Apple%22,%22description%22:%22a%22%7D,\
                %7B%22label%22:%22Pear%22,%22description%22:%22p%22%7D%5D%7D%5D%7D";
    k.send(&session, &format!("Ask me MOCK:tool:question:{args}"));
    let question = asked(&mut k.sidecar, &session, "question.asked");
    assert!(question.starts_with("que"), "{question}");
    count(&mut k.sidecar, 1);
    let answer = json!({"sessionId": session, "command": "question.reply",
                        "args": {"requestId": question, "answers": [["Apple"]]}});
    k.sidecar.ok("bb.command", answer.clone());
    let again = k.sidecar.call("bb.command", answer);
    assert_eq!(error_code(&again), "permission_not_pending");
    let events = k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    assert!(events.iter().any(|e| e["type"] == "question.replied"), "no question.replied");
    count(&mut k.sidecar, 0);
    assert_eq!(shown_ids(&k.sidecar.seen, "question.asked"), [question]);
    k.finish();
}

/// The engine is SIGKILLed with a permission pending: the sidecar restarts it, the request
/// is cancelled (count 0, a late answer is `permission_not_pending`), every session the
/// webview opened is flagged with a gap, and the session works again.
#[test]
fn an_engine_crash_cancels_pending_requests_and_flags_every_session() {
    let Some(mut k) = Kilo::start() else { return };
    let a = k.create_session();
    let b = k.create_session();
    k.send(&a, "Run it MOCK:bash:echo%20crash45");
    let request = asked(&mut k.sidecar, &a, "permission.asked");
    count(&mut k.sidecar, 1);
    // SAFETY: signalling the engine process this test's sidecar started.
    let rc = unsafe { libc::kill(i32::try_from(k.engine).unwrap(), libc::SIGKILL) };
    assert_eq!(rc, 0);
    let mut flagged = std::collections::BTreeSet::new();
    while flagged.len() < 2 {
        let gap = k.sidecar.wait_event(LONG, "a gap on both sessions", |m| {
            m["topic"] == "bb/connection" && m["payload"]["gapDetected"] == true
        });
        if let Some(s) = gap["payload"]["sessionId"].as_str()
            && (s == a || s == b)
        {
            flagged.insert(s.to_owned());
        }
    }
    count(&mut k.sidecar, 0);
    let late = approve(&mut k.sidecar, &a, &request, "deny");
    assert_eq!(error_code(&late), "permission_not_pending", "{late}");
    k.send(&a, "MOCK:text:after%20the%20crash");
    let events = k.sidecar.session_events_until(&a, "session.turn.close", LONG);
    assert!(crate::harness::streamed_text(&events).contains("after the crash"));
    k.finish();
}

/// `--permission-timeout`: a request nobody answers expires; the engine is told `reject`
/// (`permission.replied` arrives), the count drops to 0 and a late answer is
/// `permission_not_pending`.
#[test]
fn an_unanswered_permission_expires_with_permission_timeout() {
    let Some(mut k) = Kilo::start_with("ask", &["--trusted", "--permission-timeout", "1"]) else {
        return;
    };
    let session = k.create_session();
    k.send(&session, "Run it MOCK:bash:echo%20expired45");
    let request = asked(&mut k.sidecar, &session, "permission.asked");
    k.sidecar.session_events_until(&session, "permission.replied", LONG);
    count(&mut k.sidecar, 0);
    let late = approve(&mut k.sidecar, &session, &request, "allow_once");
    assert_eq!(error_code(&late), "permission_not_pending", "{late}");
    k.finish();
}
