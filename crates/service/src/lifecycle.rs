//! `EngineLife`: the supervised engine's life as webviews see it — restarts with their
//! attempt, the crash-loop breaker and its reason, the diagnostics `bb/connection` carries —
//! and the bridge's own `bb.command`s (`metrics`, `engine.restart`). Pure: the loop reports
//! what happened with `now` passed in and sends what it hands back.
//!
//! * While a restart is pending, `bb/connection` is `connecting` with `restarting: true`,
//!   the `attempt` (crashes in the breaker's window) and the exit as `lastError`.
//! * Once the breaker opens, `bb/connection` is `error` with `restarting: false` and the
//!   reason, and stays so: every call but `bb.init` answers `engine_unavailable` with that
//!   reason and what to do, without reaching the adapter, until `bb.command {command:
//!   "engine.restart"}` clears the crash history and starts the engine again.
//! * `engine.restart` on a running engine stops it (TERM, KILL after the grace) and starts a
//!   fresh one; that stop is not a crash. Without supervision (an attached engine) it answers
//!   `invalid_request`: the bridge did not start the engine.

use std::time::Instant;

use bb_protocol::v1::{
    CommandParams, CommandResult, ConnectionDiagnostics, ConnectionPayload, ConnectionStatus,
    V1Call,
};
use serde_json::json;

use crate::engine::EngineError;
use crate::metrics::Metrics;

/// A `bb.command` the bridge answers itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BridgeCommand {
    /// `metrics`: the counters.
    Metrics,
    /// `engine.restart`: start the supervised engine again (after the breaker tripped, or to
    /// replace a running one).
    EngineRestart,
}

/// The bridge command a call names, with the session id to echo.
pub(crate) fn bridge_command(call: &V1Call) -> Option<(BridgeCommand, String)> {
    let V1Call::Command(CommandParams { session_id, command, .. }) = call else { return None };
    let which = match command.as_str() {
        "metrics" => BridgeCommand::Metrics,
        "engine.restart" => BridgeCommand::EngineRestart,
        _ => return None,
    };
    Some((which, session_id.clone()))
}

/// The engine's life and the bridge's counters.
#[derive(Debug, Default)]
pub(crate) struct EngineLife {
    breaker: Option<String>,
    attempt: Option<u64>,
    pid: Option<u32>,
    port: Option<u16>,
    last_gap: Option<String>,
    /// When the oldest engine event not yet written to a webview arrived.
    unflushed_since: Option<Instant>,
    last_flush_latency_ms: Option<f64>,
    /// The counters.
    pub(crate) metrics: Metrics,
}

impl EngineLife {
    /// The answer to an engine call while the breaker is open.
    pub(crate) fn unavailable(&self) -> Option<EngineError> {
        let reason = self.breaker.as_deref()?;
        Some(EngineError::Unavailable(format!(
            "{reason}. Nothing is restarting it: send bb.command {{command: \"engine.restart\"}} \
             to start it again"
        )))
    }

    /// A started engine: its pid and port for the diagnostics.
    pub(crate) fn started(&mut self, pid: Option<u32>, port: Option<u16>) {
        self.pid = pid;
        self.port = port;
    }

    /// The engine went down and restarts after a delay (`attempt` crashes in the window).
    /// `auth`: the engine refused the bridge's credentials.
    pub(crate) fn restarting(
        &mut self,
        attempt: u64,
        why: String,
        auth: bool,
    ) -> ConnectionPayload {
        self.pid = None;
        self.metrics.crash(auth);
        self.metrics.connection(false);
        self.attempt = Some(attempt);
        ConnectionPayload {
            status: ConnectionStatus::Connecting,
            retry_count: Some(attempt),
            last_error: Some(why),
            attempt: Some(attempt),
            restarting: Some(true),
            ..ConnectionPayload::default()
        }
    }

    /// The breaker opened with `reason`.
    pub(crate) fn tripped(
        &mut self,
        reason: String,
        crashed: bool,
        auth: bool,
    ) -> ConnectionPayload {
        self.pid = None;
        if crashed {
            self.metrics.crash(auth);
        }
        self.metrics.connection(false);
        self.metrics.breaker_tripped();
        self.breaker = Some(reason.clone());
        ConnectionPayload {
            status: ConnectionStatus::Error,
            last_error: Some(reason),
            restarting: Some(false),
            ..ConnectionPayload::default()
        }
    }

    /// `engine.restart` was asked: the breaker closes, a fresh start begins.
    pub(crate) fn restart_requested(&mut self) -> ConnectionPayload {
        self.breaker = None;
        self.attempt = None;
        self.pid = None;
        self.metrics.restart();
        ConnectionPayload {
            status: ConnectionStatus::Connecting,
            restarting: Some(true),
            ..ConnectionPayload::default()
        }
    }

    /// A (re)start of the supervised engine began (scheduled or asked for).
    pub(crate) fn start_began(&mut self) {
        if self.attempt.is_some() {
            self.metrics.restart();
        }
    }

    /// A connection update from the engine adapter.
    pub(crate) fn engine_connection(&mut self, status: ConnectionStatus) {
        self.metrics.connection(status == ConnectionStatus::Connected);
        if status == ConnectionStatus::Connected {
            self.attempt = None;
        }
    }

    /// A gap in `session_id` (all sessions when `None`), described for the diagnostics.
    pub(crate) fn gap(&mut self, session_id: Option<&str>, wall_ms: u64) {
        self.metrics.continuity_lost();
        let whose = session_id.map_or("every session".to_owned(), |s| format!("session {s}"));
        self.last_gap = Some(format!(
            "{whose}: engine events may have been lost across a reconnect (at {wall_ms} ms since the epoch)"
        ));
    }

    /// Engine events arrived at `now`.
    pub(crate) fn events_arrived(&mut self, now: Instant) {
        self.unflushed_since.get_or_insert(now);
    }

    /// A `bb/events` batch was handed to a webview at `now`.
    pub(crate) fn events_flushed(&mut self, now: Instant) {
        if let Some(since) = self.unflushed_since.take() {
            self.last_flush_latency_ms =
                Some(now.saturating_duration_since(since).as_secs_f64() * 1000.0);
        }
    }

    /// `payload` with the diagnostics and the restart state added (an `error` while the
    /// breaker is open always says `restarting: false`).
    /// `warnings`: the adapter's word on the engine's setup.
    pub(crate) fn decorate(
        &self,
        mut payload: ConnectionPayload,
        queue_depth: u64,
        warnings: Vec<String>,
    ) -> ConnectionPayload {
        if self.breaker.is_some() && payload.status == ConnectionStatus::Error {
            payload.restarting = Some(false);
        }
        payload.diagnostics = Some(ConnectionDiagnostics {
            engine_pid: self.pid.map(u64::from),
            engine_port: self.port.map(u64::from),
            reconnects: Some(self.metrics.reconnects()),
            last_gap: self.last_gap.clone(),
            queue_depth: Some(queue_depth),
            last_flush_latency_ms: self.last_flush_latency_ms,
            warnings,
        });
        payload
    }

    /// The answer to `bb.command metrics`: the counters and the diagnostics.
    pub(crate) fn metrics_result(
        &self,
        session_id: String,
        queue_depth: u64,
        engine: &[(&'static str, u64)],
        warnings: Vec<String>,
    ) -> CommandResult {
        let mut output = self.metrics.snapshot_with(engine);
        let diagnostics =
            self.decorate(ConnectionPayload::default(), queue_depth, warnings).diagnostics;
        output["diagnostics"] = json!(diagnostics);
        output["breaker"] = json!(self.breaker);
        CommandResult { session_id, output: Some(output) }
    }
}
