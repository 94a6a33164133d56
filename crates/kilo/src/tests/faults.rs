//! The Kilo adapter against a `wiremock` engine, its inputs through a host core as the
//! service loop hands them over: re-listing after reconnects (a request raised while the
//! stream was down is shown once), and the faults a real engine will not produce on cue —
//! 401, a stale permission's 404, a 500 with a secret in its body, a reply slower than its
//! deadline, malformed and oversized bodies.

use std::sync::Arc;
use std::time::Duration;

use std::time::Instant;

use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use bb_host::{Clock, Engine, Host, HostConfig, Input, Prompt, PromptKind, Verdict};
use bb_protocol::v1::{SessionParams, V1Topic};
use bb_service::engine::{AnswerReason, EngineAdapter, InputReceiver, PromptAnswer};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{KiloAdapter, KiloOptions};

pub(super) const SES: &str = "ses_a";

fn permission(id: &str) -> serde_json::Value {
    json!({"id": id, "sessionID": SES, "permission": "bash", "patterns": ["echo hi"],
           "metadata": {"command": "echo hi"}, "always": ["echo *"]})
}

/// An engine whose event stream ends after `server.connected` (so the router keeps
/// reconnecting and rebuilding) and that lists `per_1`.
pub(super) async fn engine() -> MockServer {
    let sse = "data: {\"type\":\"server.connected\",\"properties\":{}}\n\n";
    engine_with(sse, json!([permission("per_1")])).await
}

/// An engine whose event stream sends `sse` then ends, with session `ses_a` and
/// `permissions` pending.
pub(super) async fn engine_with(sse: &'static str, permissions: serde_json::Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/event"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
        .mount(&server)
        .await;
    mount_rebuild(&server, json!({}), permissions).await;
    server
}

/// The routes a rebuild of `ses_a` reads: its `status` and pending `permissions`.
async fn mount_rebuild(
    server: &MockServer,
    status: serde_json::Value,
    permissions: serde_json::Value,
) {
    for (route, body) in [
        ("/session/status", status),
        ("/question", json!([])),
        ("/permission", permissions),
        ("/session/ses_a/message", json!([])),
        ("/session/ses_a", json!({"id": SES, "title": "t", "time": {"created": 1, "updated": 2}})),
    ] {
        Mock::given(method("GET"))
            .and(path(route))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(server)
            .await;
    }
}

async fn adapter(server: &MockServer, max_body: usize) -> (Arc<KiloAdapter>, InputReceiver) {
    let options =
        KiloOptions { engine_timeout: Duration::from_millis(300), ..KiloOptions::default() };
    let (adapter, updates) = KiloAdapter::with_options(options);
    let http = HttpOptions { max_body, ..HttpOptions::default() };
    let transport = HttpTransport::new(&server.uri(), EngineAuth::None, http).unwrap();
    adapter.bind(Arc::new(transport));
    adapter.select_session(SessionParams { session_id: SES.into(), tab_id: None }).await.unwrap();
    (adapter, updates)
}

/// The adapter's inputs through a host core with one ready webview, as the service loop
/// hands them over: what the webview is shown of prompts, and the open count.
pub(super) struct Through {
    host: Host,
    now: Instant,
    /// Ids of the requests whose `permission.asked` the webview was sent, in order.
    pub(super) shown: Vec<String>,
    /// The open prompt count of each `bb/state` sent.
    pub(super) counts: Vec<u64>,
    /// Gaps flagged on a session.
    pub(super) gaps: Vec<String>,
    /// The status `bb/state` last gave session `ses_a`.
    pub(super) status: Option<String>,
    /// The messages of the transcript warnings the webview was sent.
    pub(super) warnings: Vec<String>,
}

impl Through {
    pub(super) fn new() -> Self {
        let now = Clock::now(&bb_service::SystemClock);
        let mut host = Host::new(Engine::Kilo, HostConfig::default());
        host.handle(Input::ready(0), now);
        Self {
            host,
            now,
            shown: Vec::new(),
            counts: Vec::new(),
            gaps: Vec::new(),
            status: None,
            warnings: Vec::new(),
        }
    }

    /// One input, then everything the webview is sent for it.
    pub(super) fn feed(&mut self, input: Input) {
        if let Input::Gap { session_id: Some(s) } = &input {
            self.gaps.push(s.clone());
        }
        self.host.handle(input, self.now);
        self.now += Duration::from_secs(1);
        self.host.handle_timeout(self.now);
        while let Some((_, topic)) = self.host.poll_output() {
            match topic {
                V1Topic::Events(p) => {
                    for item in p.events.items().iter() {
                        let (kind, payload) = (&item.event.event_type, &item.event.payload);
                        if kind == "permission.asked" {
                            self.shown.push(payload["id"].as_str().unwrap_or_default().into());
                        } else if kind == "warning" {
                            self.warnings.push(payload["message"].as_str().unwrap_or("").into());
                        }
                    }
                }
                V1Topic::State(s) => {
                    self.counts.extend(s.pending_permission_count);
                    let ses = s.sessions.iter().find(|x| x.session_id == SES);
                    if let Some(status) = ses.and_then(|x| x.status.clone()) {
                        self.status = Some(status);
                    }
                }
                _ => {}
            }
        }
    }

    /// Feeds inputs until `done` holds (20 s at most).
    pub(super) async fn until(
        &mut self,
        updates: &mut InputReceiver,
        done: impl Fn(&Self) -> bool,
    ) {
        let wait = async {
            while !done(self) {
                let Some(input) = updates.recv().await else { panic!("the inputs ended") };
                self.feed(input);
            }
        };
        tokio::time::timeout(Duration::from_secs(20), wait).await.expect("in time");
    }
}

/// The user's answer to `per_1`, as the host allows it.
pub(super) fn answer(verdict: Verdict) -> PromptAnswer {
    PromptAnswer {
        prompt: Prompt::new(SES, "per_1", PromptKind::Exec),
        verdict,
        remember: false,
        rule_update: None,
        reason: AnswerReason::User,
    }
}

#[tokio::test]
async fn a_request_raised_while_disconnected_is_shown_once_across_reconnects() {
    let server = engine().await;
    let (_adapter, mut updates) = adapter(&server, 1 << 20).await;
    let mut host = Through::new();
    host.until(&mut updates, |h| h.counts.last() == Some(&1)).await;
    assert_eq!(host.shown, ["per_1"]);
    // Later rebuilds list it again; it is not shown again.
    host.until(&mut updates, |h| h.gaps.len() >= 3).await;
    assert_eq!(host.shown, ["per_1"], "shown again");
    assert_eq!(host.counts.last(), Some(&1));
}

/// The engine's answer to an answer, as the adapter reports it: a 404 says the engine no
/// longer knows the request (`permission_not_pending`: the host makes it stale); any other
/// failure keeps its code (the host leaves the request pending), says nothing secret and is
/// capped.
#[tokio::test]
async fn answer_faults_are_typed_and_say_nothing_secret() {
    let secret = "sk-live-abcdefghijklmnop1234";
    let cases: Vec<(ResponseTemplate, &str)> = vec![
        (ResponseTemplate::new(404).set_body_json(json!({"_tag": "PermissionNotFoundError"})), "permission_not_pending"),
        (
            ResponseTemplate::new(500).set_body_json(
                json!({"name": "UnknownError", "data": {"message": format!("boom Authorization: Bearer {secret}")}}),
            ),
            "engine_error",
        ),
        (ResponseTemplate::new(200).set_body_json(json!(true)).set_delay(Duration::from_secs(3)), "engine_timeout"),
        (ResponseTemplate::new(401), "engine_auth"),
        (ResponseTemplate::new(200).set_body_string("not json"), "engine_error"),
    ];
    for (response, code) in cases {
        let server = engine().await;
        Mock::given(method("POST"))
            .and(path("/permission/per_1/reply"))
            .respond_with(response)
            .mount(&server)
            .await;
        let (adapter, _updates) = adapter(&server, 1 << 20).await;
        let err = adapter.answer(answer(Verdict::Allow)).await.unwrap_err();
        assert_eq!(err.code(), code, "{err}");
        let wire = err.to_wire();
        assert!(!wire.message.contains(secret), "secret forwarded: {}", wire.message);
        assert!(wire.message.len() <= 400, "message not capped: {}", wire.message);
    }
}

#[tokio::test]
async fn oversized_and_malformed_bodies_are_errors_not_memory() {
    let server = engine().await;
    let huge = format!("[{}]", vec!["{\"id\":\"ses_x\"}"; 2000].join(","));
    Mock::given(method("GET"))
        .and(path("/session"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(huge, "application/json"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/session/ses_a/diff"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("{not json", "application/json"))
        .mount(&server)
        .await;
    let (adapter, _updates) = adapter(&server, 8 * 1024).await;
    let err = adapter.list_sessions().await.unwrap_err();
    assert_eq!(err.code(), "engine_error");
    assert!(err.to_string().contains("larger than 8192 bytes"), "{err}");
    let err = adapter
        .open_diff(bb_protocol::v1::OpenDiffParams {
            session_id: SES.into(),
            file_path: "a.txt".into(),
            before_ref: None,
            after_ref: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), "engine_error");
    assert!(err.to_string().contains("unexpected shape"), "{err}");
}

/// A failed rebuild is a hard error on that session (a `bb.session.rebuild_failed` event
/// with a Retry, and a gap); `bb.command retry` rebuilds it.
#[tokio::test]
async fn a_failed_rebuild_is_an_error_until_retry_rebuilds() {
    let server = MockServer::start().await;
    let sse = "data: {\"type\":\"server.connected\",\"properties\":{}}\n\n";
    Mock::given(method("GET"))
        .and(path("/event"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/session/ses_a/message"))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let ok = [
        ("/session/status", json!({})),
        ("/question", json!([])),
        ("/permission", json!([])),
        ("/session/ses_a/message", json!([])),
        ("/session/ses_a", json!({"id": SES, "title": "t", "time": {"created": 1, "updated": 2}})),
    ];
    for (route, body) in ok {
        Mock::given(method("GET"))
            .and(path(route))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&server)
            .await;
    }
    let (adapter, mut updates) = adapter(&server, 1 << 20).await;
    let mut saw_gap = false;
    let failed = async {
        while let Some(update) = updates.recv().await {
            match update {
                Input::Gap { session_id: Some(s) } if s == SES => saw_gap = true,
                Input::Events { events, .. }
                    if events[0].0.event_type == crate::REBUILD_FAILED_EVENT =>
                {
                    return events[0].0.payload.clone();
                }
                _ => {}
            }
        }
        panic!("updates ended");
    };
    let payload = tokio::time::timeout(Duration::from_secs(20), failed).await.unwrap();
    assert!(saw_gap, "the failed rebuild flagged no gap");
    assert_eq!(payload["retry"]["command"], "retry");
    let retried = adapter
        .command(bb_protocol::v1::CommandParams {
            session_id: SES.into(),
            command: "retry".into(),
            args: None,
        })
        .await
        .unwrap();
    assert_eq!(retried.output.unwrap()["retried"], "rebuild");
    let rebuilt = async {
        while let Some(update) = updates.recv().await {
            if let Input::Events { events, .. } = update
                && events[0].0.event_type == crate::REHYDRATED_EVENT
            {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), rebuilt).await.unwrap();
}

/// Binding a restarted engine flags a gap on every tracked session at the first connection
/// (the runtime tells the host the old engine's requests died with it).
#[tokio::test]
async fn an_engine_restart_flags_every_session() {
    let server = engine().await;
    let (adapter, mut updates) = adapter(&server, 1 << 20).await;
    let mut host = Through::new();
    host.until(&mut updates, |h| h.counts.last() == Some(&1)).await;
    let transport = HttpTransport::new(&server.uri(), EngineAuth::None, HttpOptions::default());
    adapter.bind(Arc::new(transport.unwrap()));
    let before = host.gaps.len();
    host.until(&mut updates, |h| h.gaps[before..].iter().any(|s| s == SES)).await;
}

/// A session the webview never opened still has its requests re-listed after a reconnect:
/// shown once, counted, and closed when the engine no longer lists them.
#[tokio::test]
async fn requests_of_untracked_sessions_are_relisted_too() {
    let server = MockServer::start().await;
    let sse = "data: {\"type\":\"server.connected\",\"properties\":{}}\n\n";
    Mock::given(method("GET"))
        .and(path("/event"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
        .mount(&server)
        .await;
    let other = json!({"id": "per_9", "sessionID": "ses_b", "permission": "edit"});
    Mock::given(method("GET"))
        .and(path("/permission"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([other])))
        .up_to_n_times(3)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/permission"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/question"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(&server)
        .await;
    let (adapter, mut updates) = KiloAdapter::new();
    let transport = HttpTransport::new(&server.uri(), EngineAuth::None, HttpOptions::default());
    adapter.bind(Arc::new(transport.unwrap()));
    let mut host = Through::new();
    host.until(&mut updates, |h| h.counts.contains(&1) && h.counts.last() == Some(&0)).await;
    assert_eq!(host.shown, ["per_9"]);
}

#[tokio::test]
async fn stream_events_no_webview_is_shown_are_counted() {
    // A sessionless event, data that is not a Kilo event, then one of the session: when its
    // update arrives, the two before it were handled.
    let sse = concat!(
        "data: {\"type\":\"plugin.added\",\"properties\":{\"name\":\"p\"}}\n\n",
        "data: {\"type\":\"server.heartbeat\"}\n\n",
        "data: not json\n\n",
        "data: {\"type\":\"session.status\",\"properties\":{\"sessionID\":\"ses_a\",\"status\":{\"type\":\"busy\"}}}\n\n",
    );
    let server = engine_with(sse, json!([])).await;
    let (adapter, mut updates) = adapter(&server, 1 << 20).await;
    let running = async {
        while let Some(update) = updates.recv().await {
            if let Input::SessionRunning { running: true, .. } = update {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), running).await.expect("the session's event");
    let counters: std::collections::HashMap<_, _> = adapter.counters().into_iter().collect();
    assert!(counters["events.unrouted_count"] >= 2, "{counters:?}");
    assert!(counters["events.malformed_count"] >= 1, "{counters:?}");
}

/// A running turn whose stream then fails for good (the engine refuses the credentials on
/// the reconnect): the session is marked not running and its transcript says why and what
/// to do, so no window shows it busy forever.
#[tokio::test]
async fn a_stream_that_fails_for_good_ends_the_running_turn_with_a_warning() {
    let server = MockServer::start().await;
    let busy = "data: {\"type\":\"server.connected\",\"properties\":{}}\n\n\
                data: {\"type\":\"session.status\",\"properties\":{\"sessionID\":\"ses_a\",\
                \"status\":{\"type\":\"busy\"}}}\n\n";
    Mock::given(method("GET"))
        .and(path("/event"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(busy, "text/event-stream"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/event"))
        .respond_with(ResponseTemplate::new(401).set_body_string("{\"error\":\"unauthorized\"}"))
        .mount(&server)
        .await;
    mount_rebuild(&server, json!({"ses_a": {"type": "busy"}}), json!([])).await;
    let (_adapter, mut updates) = adapter(&server, 1 << 20).await;
    let mut host = Through::new();
    host.until(&mut updates, |h| h.status.as_deref() == Some("running")).await;
    host.until(&mut updates, |h| !h.warnings.is_empty()).await;
    assert_eq!(host.status.as_deref(), Some("idle"), "still shown running");
    let [warning] = &host.warnings[..] else { panic!("one warning: {:?}", host.warnings) };
    assert!(warning.contains("HTTP 401"), "{warning}");
    assert!(warning.contains("credentials"), "{warning}");
}
