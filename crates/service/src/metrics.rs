//! `Metrics`: the bridge's counters, answered by `bb.command {command: "metrics"}`. Pure:
//! the loop reports what it sees (requests, responses, what it writes, engine lifecycle) with
//! `now` passed in.
//!
//! Names follow the Kilo backend plan's telemetry table (`kilo.cli.*`) and mean the same for
//! every engine:
//!
//! * `kilo.cli.chat.ttft_ms` — from a `bb.sendMessage` to the first
//!   `transcript.assistant_stream` item of that session written to a webview: last, p50, p95
//!   and max over the last 256 turns, and the count.
//! * `kilo.cli.sse.reconnect_count` — the engine event stream went from connected to
//!   connecting.
//! * `kilo.cli.sse.auth_failures` — calls or starts refused with `engine_auth`.
//! * `kilo.cli.session.rehydrate_fail_count` — sessions whose continuity was lost (a gap the
//!   engine could not fill, a failed rebuild).
//! * `kilo.cli.adapter.unknown_event_type` — items written with class `unknown_event`.
//! * `kilo.cli.server.crash_count` — exits or failed starts of the supervised engine.
//! * `kilo.cli.permissions.prompt_count` — `permission.request` items written.
//! * `kilo.cli.security.out_of_scope_path_attempt_count` — calls answered
//!   `path_outside_workspace`.
//! * `kilo.cli.tools.write.allow_count` / `deny_count` — answers approving / denying a
//!   write, a command or an unknown kind that the engine took (the host's prompt counters,
//!   every engine).
//!
//! The host's prompt counters (`permissions.prompt_count`: prompts raised as new, and the
//! write allows/denies) and the engine adapter's own counters (`EngineAdapter::counters`,
//! e.g. Kilo's out-of-scope path attempts) are reported under the same `kilo.cli.<name>`
//! keys and take precedence: the host sees every prompt, the adapter every refused path; the
//! loop only what it wrote or answered. Its own observation of such a key stays under
//! `bridge.observed`.
//!
//! Under `bridge`: requests, error responses by code, events written, engine restarts,
//! breaker trips and sessions rebuilt after a reconnect (the adapter's
//! `bridge.rehydrations`). `kilo.cli.credentials.insecure_storage_detected` is the Kilo
//! adapter's (its check of the engine's credential store at start).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Instant;

use serde_json::{Value, json};

/// Turns kept for the time-to-first-token percentiles.
const TTFT_SAMPLES: usize = 256;

/// The counters.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    requests: u64,
    errors: BTreeMap<String, u64>,
    events: u64,
    unknown_events: u64,
    permission_prompts: u64,
    out_of_scope_paths: u64,
    reconnects: u64,
    auth_failures: u64,
    continuity_lost: u64,
    crashes: u64,
    restarts: u64,
    breaker_trips: u64,
    connected: bool,
    /// Sessions with a `bb.sendMessage` awaiting its first assistant text.
    sent_at: HashMap<String, Instant>,
    ttft_ms: VecDeque<f64>,
    ttft_count: u64,
}

impl Metrics {
    /// A request arrived.
    pub(crate) fn request(&mut self) {
        self.requests += 1;
    }

    /// A `bb.sendMessage` for `session_id` was dispatched at `now`.
    pub(crate) fn message_sent(&mut self, session_id: &str, now: Instant) {
        self.sent_at.insert(session_id.to_owned(), now);
    }

    /// An error response with `code` was written.
    pub(crate) fn error(&mut self, code: &str) {
        *self.errors.entry(code.to_owned()).or_default() += 1;
        match code {
            "engine_auth" => self.auth_failures += 1,
            "path_outside_workspace" => self.out_of_scope_paths += 1,
            _ => {}
        }
    }

    /// Whether a `bb.sendMessage` for `session_id` awaits its first assistant text.
    pub(crate) fn awaits_text(&self, session_id: &str) -> bool {
        self.sent_at.contains_key(session_id)
    }

    /// Event items of `session_id` with these classes were written at `now`; `None` for a
    /// session no message awaits the first text of ([`Metrics::awaits_text`]).
    pub(crate) fn events_written<'a>(
        &mut self,
        session_id: Option<&str>,
        classes: impl IntoIterator<Item = &'a str>,
        now: Instant,
    ) {
        for class in classes {
            self.events += 1;
            match class {
                "unknown_event" => self.unknown_events += 1,
                "permission.request" => self.permission_prompts += 1,
                "transcript.assistant_stream" => {
                    if let Some(sent) = session_id.and_then(|s| self.sent_at.remove(s)) {
                        let ms = now.saturating_duration_since(sent).as_secs_f64() * 1000.0;
                        if self.ttft_ms.len() == TTFT_SAMPLES {
                            self.ttft_ms.pop_front();
                        }
                        self.ttft_ms.push_back(ms);
                        self.ttft_count += 1;
                    }
                }
                _ => {}
            }
        }
    }

    /// The engine link is connected (`true`) or not; a drop after a connection counts as a
    /// reconnect.
    pub(crate) fn connection(&mut self, connected: bool) {
        if self.connected && !connected {
            self.reconnects += 1;
        }
        self.connected = connected;
    }

    /// Continuity of a session (or of all) was lost.
    pub(crate) fn continuity_lost(&mut self) {
        self.continuity_lost += 1;
    }

    /// The supervised engine exited or failed to start.
    pub(crate) fn crash(&mut self, auth: bool) {
        self.crashes += 1;
        self.connected = false;
        if auth {
            self.auth_failures += 1;
        }
    }

    /// A (re)start of the supervised engine began.
    pub(crate) fn restart(&mut self) {
        self.restarts += 1;
    }

    /// The crash-loop breaker opened.
    pub(crate) fn breaker_tripped(&mut self) {
        self.breaker_trips += 1;
    }

    /// Reconnects so far (for `bb/connection` diagnostics).
    pub(crate) fn reconnects(&self) -> u64 {
        self.reconnects
    }

    /// The counters as `bb.command metrics` returns them, with the engine adapter's own
    /// `engine` counters (spec names without the `kilo.cli.` prefix) in place of the bridge's;
    /// a name under `bridge.` goes into `bridge` (the adapter's `rehydrations`).
    pub(crate) fn snapshot_with(&self, engine: &[(&'static str, u64)]) -> Value {
        let mut out = self.snapshot();
        let mut observed = serde_json::Map::new();
        for (name, value) in engine {
            if let Some(own) = name.strip_prefix("bridge.") {
                out["bridge"][own] = json!(value);
                continue;
            }
            let key = format!("kilo.cli.{name}");
            if let Some(own) = out.get(&key).cloned() {
                observed.insert(key.clone(), own);
            }
            out[key] = json!(value);
        }
        if !observed.is_empty() {
            out["bridge"]["observed"] = Value::Object(observed);
        }
        out
    }

    /// The counters as `bb.command metrics` returns them.
    pub(crate) fn snapshot(&self) -> Value {
        let mut sorted: Vec<f64> = self.ttft_ms.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        let ttft = json!({
            "count": self.ttft_count,
            "last": self.ttft_ms.back(),
            "p50": percentile(&sorted, 50),
            "p95": percentile(&sorted, 95),
            "max": sorted.last(),
        });
        json!({
            "kilo.cli.chat.ttft_ms": ttft,
            "kilo.cli.sse.reconnect_count": self.reconnects,
            "kilo.cli.sse.auth_failures": self.auth_failures,
            "kilo.cli.session.rehydrate_fail_count": self.continuity_lost,
            "kilo.cli.adapter.unknown_event_type": self.unknown_events,
            "kilo.cli.server.crash_count": self.crashes,
            "kilo.cli.permissions.prompt_count": self.permission_prompts,
            "kilo.cli.security.out_of_scope_path_attempt_count": self.out_of_scope_paths,
            "kilo.cli.tools.write.allow_count": 0,
            "kilo.cli.tools.write.deny_count": 0,
            "bridge": {
                "requests": self.requests,
                "errors": self.errors,
                "events": self.events,
                "engineRestarts": self.restarts,
                "breakerTrips": self.breaker_trips,
                "rehydrations": 0,
            },
        })
    }
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[f64], p: usize) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}
