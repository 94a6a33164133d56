//! Faults from a fake agent (`fixtures/acp/fake_agent.py`): a crash mid-turn, a malformed
//! line, a request the bridge does not know.

use bb_acp::{AcpEventKind, AcpHub};
use bb_protocol::ws::{AcpSessionPromptParams, ContentBlock, StopReason};

use crate::harness::{Events, LONG, World, is_dead, script_session};

async fn fake(mode: &str) -> (World, AcpHub, Events, String, String) {
    let world = World::new();
    let (hub, events) = world.hub();
    let (conn, name, session) = script_session(&hub, "fake_agent.py", &[mode]).await;
    assert_eq!(name, "fake-agent");
    (world, hub, events, conn, session)
}

fn prompt(conn: &str, session: &str) -> AcpSessionPromptParams {
    AcpSessionPromptParams {
        connection_id: conn.to_owned(),
        session_id: session.to_owned(),
        prompt: vec![ContentBlock::Text { text: "go".to_owned(), annotations: None }],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_turn_fails_the_prompt_and_is_reported() {
    let (_world, hub, mut events, conn, session) = fake("crash").await;
    let pid = hub.agent_pid(&conn).unwrap().unwrap();
    let err = tokio::time::timeout(LONG, hub.session_prompt(prompt(&conn, &session)))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code(), "acp_connection_closed", "{err}");
    assert!(err.to_string().contains("exit code 3"), "the error names the exit: {err}");
    events
        .wait_for(LONG, "closed with the exit", |e| {
            matches!(&e.kind,
            AcpEventKind::State { state: "closed", detail, .. }
                if detail["reason"].as_str().is_some_and(|r| r.contains("exit code 3")))
        })
        .await;
    assert_eq!(events.agent_text(&session), "about to crash");
    assert!(is_dead(pid));
    let err = hub.session_prompt(prompt(&conn, &session)).await.unwrap_err();
    assert_eq!(err.code(), "acp_connection_closed", "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_line_does_not_break_the_turn() {
    let (_world, hub, mut events, conn, session) = fake("garbage").await;
    let end = tokio::time::timeout(LONG, hub.session_prompt(prompt(&conn, &session)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(end.stop_reason, StopReason::EndTurn);
    events.drain();
    assert_eq!(events.agent_text(&session), "after garbage");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_agent_request_is_answered_method_not_found() {
    let (_world, hub, mut events, conn, session) = fake("unknown-request").await;
    let end = tokio::time::timeout(LONG, hub.session_prompt(prompt(&conn, &session)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(end.stop_reason, StopReason::EndTurn);
    events.drain();
    assert_eq!(events.agent_text(&session), "client answered -32601");
}
