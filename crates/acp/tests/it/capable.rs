//! The hub with `fixtures/acp/capable_agent.py`: what the real agents never use, at the
//! `acp_*` level — a terminal killed when its connection closes, a write cancelled by a
//! cancel, optional methods refused when not offered.

use bb_acp::{AcpEventKind, AcpHub};
use bb_protocol::ws::{
    AcpDisconnectParams, AcpSessionLoadParams, AcpSessionParams, AcpSessionPromptParams,
    ContentBlock,
};

use crate::harness::{Events, LONG, World, is_dead, script_session};

async fn capable(world: &World, flags: &[&str]) -> (AcpHub, Events, String, String) {
    let (hub, events) = world.hub_trusted();
    let (conn, _, session) = script_session(&hub, "capable_agent.py", flags).await;
    (hub, events, conn, session)
}

fn prompt(conn: &str, session: &str, text: &str) -> AcpSessionPromptParams {
    AcpSessionPromptParams {
        connection_id: conn.to_owned(),
        session_id: session.to_owned(),
        prompt: vec![ContentBlock::Text { text: text.to_owned(), annotations: None }],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_terminal_dies_with_its_connection() {
    let world = World::new();
    let (hub, mut events, conn, session) = capable(&world, &[]).await;
    let hub = std::sync::Arc::new(hub);
    let turn = {
        let hub = hub.clone();
        let p = prompt(&conn, &session, "FAKE:terminal-hold:echo%20started%3B%20sleep%20600");
        tokio::spawn(async move { hub.session_prompt(p).await })
    };
    events
        .wait_for(LONG, "the terminal's first line", |e| {
            matches!(&e.kind, AcpEventKind::TerminalOutput { output, .. } if output == "started\n")
        })
        .await;
    let agent = hub.agent_pid(&conn).unwrap().unwrap();
    let sleeper = bb_test_support::procfs::descendants_of(std::process::id())
        .into_iter()
        .find(|p| bb_test_support::procfs::cmdline(*p).contains("sleep 600"))
        .expect("the terminal's command runs");
    hub.disconnect(AcpDisconnectParams { id: conn.clone() }).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !(is_dead(sleeper) && is_dead(agent)) {
        assert!(
            std::time::Instant::now() < deadline,
            "the terminal {sleeper} outlived its connection"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let err = turn.await.unwrap().unwrap_err();
    assert_eq!(err.code(), "acp_connection_closed", "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_methods_the_agent_does_not_offer_are_not_supported() {
    let world = World::new();
    let (hub, _events, conn, session) = capable(&world, &["--no-delete", "--no-resume"]).await;
    let ids = AcpSessionParams { connection_id: conn.clone(), session_id: session.clone() };
    let err = hub.session_delete(ids.clone()).await.unwrap_err();
    assert_eq!(err.code(), "not_supported", "{err}");
    assert!(err.to_string().contains("session/delete"), "{err}");
    let load = AcpSessionLoadParams {
        connection_id: conn.clone(),
        session_id: session,
        cwd: None,
        mcp_servers: None,
    };
    let err = hub.session_resume(load.clone()).await.unwrap_err();
    assert_eq!(err.code(), "not_supported", "{err}");
    // Opening falls back to `session/load` (a replay) when resume is not offered.
    let (_, loaded) = hub.session_open(load).await.unwrap();
    assert!(loaded);
    // An image prompt to an agent without `promptCapabilities.image`.
    let mut p = prompt(&conn, &ids.session_id, "look");
    p.prompt = vec![ContentBlock::Image {
        data: "aGk=".to_owned(),
        mime_type: "image/png".to_owned(),
        uri: None,
        annotations: None,
    }];
    let err = hub.session_prompt(p).await.unwrap_err();
    assert_eq!(err.code(), "not_supported", "{err}");
    assert!(err.to_string().contains("promptCapabilities.image"), "{err}");
}
