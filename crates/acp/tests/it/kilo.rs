//! The hub against the real `kilo acp` and the mock LLM.

use std::sync::Arc;
use std::time::Duration;

use bb_acp::{AcpError, AcpEventKind, AcpHub};
use bb_protocol::ws::{
    AcpConnectParams, AcpConnectionStatus, AcpDisconnectParams, AcpPermissionReplyParams,
    AcpRequestId, AcpSessionCancelParams, AcpSessionLoadParams, AcpSessionNewParams,
    AcpSessionPromptParams, ContentBlock, PermissionOutcome, StopReason,
};
use serde_json::Value;

use crate::harness::{Events, LONG, World, group_members, is_dead, kilo_bin};

struct Kilo {
    _world: World,
    hub: Arc<AcpHub>,
    events: Events,
    conn: String,
}

impl Kilo {
    async fn start() -> Self {
        let bin = kilo_bin();
        let world = World::new().with_kilo();
        let (hub, events) = world.hub();
        let info = hub
            .connect(AcpConnectParams {
                command: bin.display().to_string(),
                args: Some(vec!["acp".to_owned()]),
                env: None,
                cwd: None,
            })
            .await
            .unwrap();
        assert_eq!(info.status, AcpConnectionStatus::Ready);
        assert_eq!(info.protocol_version, "1");
        assert_eq!(info.agent_info.name, "Kilo");
        assert_eq!(info.agent_info.version, "7.7.9");
        Self { _world: world, hub: Arc::new(hub), events, conn: info.id }
    }

    async fn new_session(&self) -> String {
        let params =
            AcpSessionNewParams { connection_id: self.conn.clone(), cwd: None, mcp_servers: None };
        let id = self.hub.session_new(params).await.unwrap();
        assert!(id.starts_with("ses_"), "{id}");
        id
    }

    /// Starts a prompt in a task; the handle resolves with the turn's end.
    fn prompt(
        &self,
        session: &str,
        text: &str,
    ) -> tokio::task::JoinHandle<Result<bb_protocol::ws::AcpPromptResult, AcpError>> {
        let hub = self.hub.clone();
        let params = AcpSessionPromptParams {
            connection_id: self.conn.clone(),
            session_id: session.to_owned(),
            prompt: vec![ContentBlock::Text { text: text.to_owned(), annotations: None }],
        };
        tokio::spawn(async move { hub.session_prompt(params).await })
    }

    async fn permission(&mut self, session: &str) -> (AcpRequestId, Value) {
        let ev = self
            .events
            .wait_for(LONG, "a permission request", |e| {
                matches!(&e.kind, AcpEventKind::PermissionRequest { session_id, .. } if session_id == session)
            })
            .await;
        assert_eq!(ev.connection_id, self.conn);
        let AcpEventKind::PermissionRequest { request_id, options, .. } = ev.kind else {
            unreachable!()
        };
        (request_id, options)
    }

    fn reply(
        &self,
        session: &str,
        id: AcpRequestId,
        outcome: PermissionOutcome,
    ) -> AcpPermissionReplyParams {
        AcpPermissionReplyParams {
            connection_id: self.conn.clone(),
            session_id: Some(session.to_owned()),
            request_id: id,
            outcome,
        }
    }
}

fn selected(option: &str) -> PermissionOutcome {
    PermissionOutcome::Selected { option_id: option.to_owned() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_prompt_streams_a_reply_then_disconnect_leaves_no_process() {
    let mut k = Kilo::start().await;
    let pid = k.hub.agent_pid(&k.conn).unwrap().unwrap();
    let session = k.new_session().await;
    let turn = k.prompt(&session, "Say it MOCK:text:hello%20from%20acp");
    let end = turn.await.unwrap().unwrap();
    assert_eq!(end.stop_reason, StopReason::EndTurn);
    k.events
        .wait_for(LONG, "idle with end_turn", |e| {
            matches!(&e.kind, AcpEventKind::State { state: "idle", detail, .. }
                if detail["stopReason"] == "end_turn")
        })
        .await;
    assert_eq!(k.events.agent_text(&session), "hello from acp");
    let running = k
        .events
        .seen
        .iter()
        .position(|e| matches!(e.kind, AcpEventKind::State { state: "running", .. }));
    let first_chunk = k.events.seen.iter().position(|e| matches!(&e.kind,
        AcpEventKind::SessionUpdate { update, .. } if update["sessionUpdate"] == "agent_message_chunk"));
    assert!(running < first_chunk, "running is reported before the reply streams");

    k.hub.disconnect(AcpDisconnectParams { id: k.conn.clone() }).await.unwrap();
    assert!(is_dead(pid), "the agent {pid} outlived acp_disconnect");
    assert!(group_members(pid).is_empty(), "processes of the agent's group remain");
    assert_eq!(k.hub.status(&k.conn).unwrap(), AcpConnectionStatus::Closed);
    k.events
        .wait_for(LONG, "closed", |e| {
            matches!(&e.kind, AcpEventKind::State { state: "closed", session_id: None, detail }
                if detail["reason"] == "disconnected")
        })
        .await;
    // A call on a closed connection is a clear error.
    let err = k
        .hub
        .session_new(AcpSessionNewParams {
            connection_id: k.conn.clone(),
            cwd: None,
            mcp_servers: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), "acp_connection_closed", "{err}");
    assert!(err.to_string().contains("call acp_connect again"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_approved_and_one_denied() {
    let mut k = Kilo::start().await;
    let session = k.new_session().await;

    let turn = k.prompt(&session, "Run it MOCK:bash:echo%20zebra42");
    let (id, options) = k.permission(&session).await;
    let ids: Vec<&str> =
        options.as_array().unwrap().iter().map(|o| o["optionId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["once", "always", "reject"]);
    assert_eq!(k.hub.pending_permissions(&k.conn, &session), 1);
    // An option that was not offered is refused, and the request stays pending.
    let err = k
        .hub
        .permission_reply(k.reply(&session, id.clone(), selected("sometimes")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_params", "{err}");
    k.hub.permission_reply(k.reply(&session, id.clone(), selected("once"))).await.unwrap();
    assert_eq!(turn.await.unwrap().unwrap().stop_reason, StopReason::EndTurn);
    let ran = k
        .events
        .updates(&session)
        .iter()
        .any(|u| u["sessionUpdate"] == "tool_call_update" && u.to_string().contains("zebra42"));
    assert!(ran, "the approved command ran: {:#?}", k.events.updates(&session));
    // Answering twice is an error naming the state.
    let err = k.hub.permission_reply(k.reply(&session, id, selected("once"))).await.unwrap_err();
    assert_eq!(err.code(), "permission_not_pending", "{err}");

    let turn = k.prompt(&session, "Run it MOCK:bash:echo%20yak43");
    let (id, _) = k.permission(&session).await;
    k.hub.permission_reply(k.reply(&session, id, selected("reject"))).await.unwrap();
    assert_eq!(turn.await.unwrap().unwrap().stop_reason, StopReason::EndTurn);
    k.events.drain();
    let outputs: Vec<String> = k
        .events
        .updates(&session)
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .map(Value::to_string)
        .collect();
    assert!(
        !outputs.iter().any(|o| o.contains("yak43\\n")),
        "the denied command did not run: {outputs:#?}"
    );
    let settled = k
        .events
        .seen
        .iter()
        .filter(|e| matches!(&e.kind, AcpEventKind::PermissionSettled { .. }))
        .count();
    assert_eq!(settled, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_turn_ends_cancelled_and_answers_pending_permissions() {
    let mut k = Kilo::start().await;
    let session = k.new_session().await;
    let turn = k.prompt(&session, "Go MOCK:slow");
    k.events
        .wait_for(LONG, "the slow reply streaming", |e| matches!(&e.kind,
            AcpEventKind::SessionUpdate { update, .. } if update["sessionUpdate"] == "agent_message_chunk"))
        .await;
    let cancel =
        AcpSessionCancelParams { connection_id: k.conn.clone(), session_id: session.clone() };
    k.hub.session_cancel(cancel.clone()).await.unwrap();
    let end = tokio::time::timeout(LONG, turn).await.unwrap().unwrap().unwrap();
    assert_eq!(end.stop_reason, StopReason::Cancelled);

    // A permission pending at the cancel is answered `cancelled`.
    let turn = k.prompt(&session, "Run it MOCK:bash:echo%20owl44");
    let (id, _) = k.permission(&session).await;
    k.hub.session_cancel(cancel).await.unwrap();
    k.events
        .wait_for(LONG, "the permission settled as cancelled", |e| {
            matches!(&e.kind,
            AcpEventKind::PermissionSettled { request_id, outcome, .. }
                if *request_id == id && outcome["outcome"] == "cancelled")
        })
        .await;
    let end = tokio::time::timeout(LONG, turn).await.unwrap().unwrap().unwrap();
    assert_eq!(end.stop_reason, StopReason::Cancelled);
    assert_eq!(k.hub.pending_permissions(&k.conn, &session), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_replays_a_session_and_dropping_the_hub_stops_the_agent() {
    let mut k = Kilo::start().await;
    let session = k.new_session().await;
    let end = k.prompt(&session, "MOCK:text:remember%20the%20walrus").await.unwrap().unwrap();
    assert_eq!(end.stop_reason, StopReason::EndTurn);
    k.events.drain();
    let before = k.events.seen.len();
    k.hub
        .session_load(AcpSessionLoadParams {
            connection_id: k.conn.clone(),
            session_id: session.clone(),
            cwd: None,
            mcp_servers: None,
        })
        .await
        .unwrap();
    k.events.drain();
    let replayed: String = k.events.seen[before..]
        .iter()
        .filter_map(|e| match &e.kind {
            AcpEventKind::SessionUpdate { update, .. } => Some(update.to_string()),
            _ => None,
        })
        .collect();
    assert!(replayed.contains("remember the walrus"), "history replayed: {replayed}");
    // Kilo offers `session/list`: the session is in it.
    let listed =
        k.hub.list_sessions(&k.conn, None).await.unwrap().expect("kilo offers session/list");
    assert!(listed.iter().any(|s| s["sessionId"] == session.as_str()), "{listed:#?}");

    let pid = k.hub.agent_pid(&k.conn).unwrap().unwrap();
    drop(k.hub);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !is_dead(pid) {
        assert!(std::time::Instant::now() < deadline, "the agent outlived its hub");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_refuses_a_cwd_outside_an_untrusted_workspace_and_a_missing_command() {
    let world = World::new();
    let (hub, _events) = world.hub();
    let outside = world.path("home").display().to_string();
    let err = hub
        .connect(AcpConnectParams {
            command: "sh".to_owned(),
            args: None,
            env: None,
            cwd: Some(outside),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), "workspace_untrusted", "{err}");
    let err = hub
        .connect(AcpConnectParams {
            command: "no-such-agent-xyz".to_owned(),
            args: None,
            env: None,
            cwd: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), "acp_spawn_failed", "{err}");
    let env = Some([("LD_PRELOAD".to_owned(), "/tmp/x.so".to_owned())].into());
    let err = hub
        .connect(AcpConnectParams { command: "sh".to_owned(), args: None, env, cwd: None })
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_params", "{err}");
    let err = hub.disconnect(AcpDisconnectParams { id: "nope".to_owned() }).await.unwrap_err();
    assert_eq!(err.code(), "acp_connection_not_found", "{err}");
}
