//! The agent's life: when it dies on its own, every session's tab is told why (exit status
//! and redacted stderr tail), `bb/connection` says the bridge is restarting it, and it is
//! started again after the supervisor's doubling delay, at most
//! [`RestartPolicy::max_crashes`](bb_supervisor::restart::RestartPolicy) − 1 times within the
//! window (`bb_supervisor::CrashHistory`, the crash-loop breaker: 3 crashes in 10 minutes
//! give up). A restarted agent resumes the sessions that were open (`session/resume`, else
//! `session/load`; a session it cannot reopen is reported and reopened on its next use).
//! Once the breaker is open, calls answer `engine_unavailable` with the reason until
//! `bb.command {command: "agent.restart"}` (the service keeps `engine.restart` for the
//! engines it supervises itself).

use std::sync::Arc;

use bb_host::{Clock, Input};
use bb_protocol::v1::ConnectionStatus;
use bb_protocol::ws::AcpSessionLoadParams;
use bb_service::SystemClock;
use bb_supervisor::restart::{CrashHistory, RestartDecision, RestartPolicy};
use serde_json::{Map, json};

use super::{Inner, lock, lock_life};

/// The agent's restarts.
#[derive(Debug)]
pub(crate) struct Life {
    history: CrashHistory,
    /// Why calls are refused while the agent is down: restarting, or the breaker open.
    down: Option<String>,
    /// The breaker is open: nothing restarts the agent until `agent.restart`.
    tripped: bool,
    /// The bridge is stopping: an agent that goes away now is not restarted.
    pub(crate) shutting_down: bool,
    /// Restarts done.
    pub(crate) restarts: u64,
}

impl Default for Life {
    fn default() -> Self {
        Self {
            history: CrashHistory::new(RestartPolicy::default()),
            down: None,
            tripped: false,
            shutting_down: false,
            restarts: 0,
        }
    }
}

impl Life {
    /// Why calls are refused now, if they are.
    pub(crate) fn unavailable(&self) -> Option<String> {
        self.down.clone()
    }
}

fn connection(status: ConnectionStatus, attempt: Option<u64>, why: Option<String>) -> Input {
    Input::connection(status, attempt, why)
}

/// The current agent went away with `reason`: tell every session, then restart it or open
/// the breaker.
pub(crate) fn agent_gone(inner: &Arc<Inner>, reason: &str) -> Vec<Input> {
    let mut out = Vec::new();
    let mut life = lock_life(&inner.life);
    if life.shutting_down || reason == "disconnected" {
        return out;
    }
    let sessions: Vec<String> =
        lock(&inner.state).sessions.iter().map(|s| s.session_id.clone()).collect();
    for session in &sessions {
        let payload = Map::from_iter([("reason".to_owned(), json!(reason))]);
        out.push(inner.event(session, "agent_exited", payload));
    }
    // Its requests died with it.
    {
        let mut st = lock(&inner.state);
        st.asked.clear();
        st.tracked.questions.clear();
    }
    out.push(Input::EngineRestarted);
    match life.history.record_crash(SystemClock.now()) {
        RestartDecision::Restart { after, crashes } => {
            let why =
                format!("the ACP agent is gone ({reason}); restarting it (attempt {crashes})");
            life.down = Some(why.clone());
            out.push(connection(
                ConnectionStatus::Connecting,
                Some(crashes as u64),
                Some(why.clone()),
            ));
            for session in &sessions {
                let payload = Map::from_iter([
                    ("message".to_owned(), json!(why)),
                    ("attempt".to_owned(), json!(crashes)),
                ]);
                out.push(inner.event(session, "agent_restarting", payload));
            }
            let inner = inner.clone();
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                restart(inner, sessions).await;
            });
        }
        RestartDecision::GiveUp { crashes, window } => {
            let why = format!(
                "the ACP agent crashed {crashes} times within {} minutes (last: {reason}); \
                 nothing is restarting it: send bb.command {{command: \"agent.restart\"}} to start it again",
                window.as_secs() / 60
            );
            life.down = Some(why.clone());
            life.tripped = true;
            out.push(connection(ConnectionStatus::Error, None, Some(why)));
        }
    }
    out
}

/// `agent.restart`: closes the breaker (or replaces a running agent) and starts it again.
pub(crate) async fn restart_requested(inner: Arc<Inner>) {
    let sessions: Vec<String> =
        lock(&inner.state).sessions.iter().map(|s| s.session_id.clone()).collect();
    {
        let mut life = lock_life(&inner.life);
        life.history = CrashHistory::new(life.history.policy());
        life.tripped = false;
        life.down = Some("the ACP agent is restarting on request".to_owned());
    }
    // The old agent's end is not a crash.
    let old = inner.conn();
    lock_life(&inner.life).shutting_down = true;
    let _ = inner.hub.disconnect(bb_protocol::ws::AcpDisconnectParams { id: old }).await;
    lock_life(&inner.life).shutting_down = false;
    inner.send(connection(ConnectionStatus::Connecting, None, None)).await;
    restart(inner, sessions).await;
}

/// Starts the agent again and reopens the sessions that were open.
async fn restart(inner: Arc<Inner>, sessions: Vec<String>) {
    match inner.hub.connect(inner.connect.clone()).await {
        Ok(info) => {
            *inner.conn.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
                info.id.clone();
            *inner.version.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
                info.agent_info.version;
            {
                let mut life = lock_life(&inner.life);
                life.down = None;
                life.restarts += 1;
            }
            tracing::info!(connection = %info.id, "ACP agent restarted");
            inner.send(connection(ConnectionStatus::Connected, None, None)).await;
            for session in sessions {
                let opened = inner
                    .hub
                    .session_open(AcpSessionLoadParams {
                        connection_id: info.id.clone(),
                        session_id: session.clone(),
                        cwd: Some(inner.workspace.display().to_string()),
                        mcp_servers: None,
                    })
                    .await;
                let update = match opened {
                    Ok((_, loaded)) => {
                        let how = if loaded { "load" } else { "resume" };
                        let message =
                            format!("the agent was restarted; the session was reopened ({how})");
                        let payload = Map::from_iter([
                            ("how".to_owned(), json!(how)),
                            ("message".to_owned(), json!(message)),
                        ]);
                        inner.event(&session, "session_resumed", payload)
                    }
                    Err(err) => {
                        let message = format!(
                            "the agent was restarted but could not reopen the session: {err}"
                        );
                        let payload = Map::from_iter([
                            ("code".to_owned(), json!(err.code())),
                            ("message".to_owned(), json!(message)),
                        ]);
                        inner.event(&session, "session_resume_failed", payload)
                    }
                };
                inner.send(update).await;
            }
        }
        Err(err) => {
            // A start that fails is one more crash: the breaker decides.
            let reason = format!("the agent could not be started again: {err}");
            tracing::warn!(%reason, "ACP agent restart failed");
            for update in agent_gone(&inner, &reason) {
                inner.send(update).await;
            }
        }
    }
}
