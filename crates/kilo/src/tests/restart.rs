//! Restart pacing and the crash-loop breaker through the service loop, in simulated time: the
//! process spawner is a mockall double (the sequence of spawns is what is under test), each
//! fake engine process prints its listening line and crashes after a scripted lifetime, and
//! the tokio clock is paused, so minutes of engine life pass in no real time.

use std::collections::VecDeque;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bb_host::Clock;
use bb_protocol::V1Message;
use bb_protocol::v1::{
    Capabilities, ConnectionPayload, ConnectionStatus, CreateSessionParams, EngineInfo, EngineKind,
    EngineStatus, InitResult, ListSessionsResult, SendMessageParams, SendMessageResult, SessionAck,
    SessionParams, SessionSummary, V1Call, V1Request, V1Topic,
};
use bb_supervisor::{EngineProcess, ExitInfo, MockProcessSpawner, OutputLine, OutputStream};

use crate::supervisor::{
    EngineEndpoint, HealthProbe, KiloConfig, KiloSupervisor, PASSWORD_VAR, ProbeError,
};
use mockall::Sequence;
use secrecy::ExposeSecret;

use bb_service::engine::{EngineAdapter, EngineError, InputReceiver, input_channel};
use bb_service::sink::{Inbound, MemoryWebview, memory};
use bb_service::{Endpoint, Service, ServiceConfig, ServiceError, Supervision};

/// The Clock port over tokio's (paused) clock, so the crash history and the loop's timers
/// share one simulated time.
#[derive(Debug)]
struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        sim_now().into_std()
    }

    fn wall_ms(&self) -> u64 {
        0
    }
}

/// The simulated (paused tokio) time: the test's one door to a clock.
#[allow(clippy::disallowed_methods)]
fn sim_now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

const CRASH: ExitInfo = ExitInfo { code: Some(1), signal: None };

/// An engine process that reports where it listens, then crashes after `life`.
#[derive(Debug)]
struct FakeProcess {
    pid: u32,
    lines: VecDeque<OutputLine>,
    dies_at: tokio::time::Instant,
}

impl FakeProcess {
    fn new(n: u16, life: Duration) -> Self {
        let line = format!("kilo server listening on http://127.0.0.1:{}", 4000 + n);
        Self {
            pid: 1000 + u32::from(n),
            lines: VecDeque::from([OutputLine { stream: OutputStream::Stdout, text: line }]),
            dies_at: sim_now() + life,
        }
    }
}

#[async_trait]
impl EngineProcess for FakeProcess {
    fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    async fn next_line(&mut self) -> Option<OutputLine> {
        self.lines.pop_front()
    }

    async fn wait(&mut self) -> io::Result<ExitInfo> {
        tokio::time::sleep_until(self.dies_at).await;
        Ok(CRASH)
    }

    async fn terminate(&mut self, _grace: Duration) -> io::Result<ExitInfo> {
        Ok(ExitInfo { code: None, signal: Some(15) })
    }
}

/// Every started engine is healthy at once.
#[derive(Debug)]
struct ReadyProbe;

#[async_trait]
impl HealthProbe for ReadyProbe {
    async fn health(&self, _: &EngineEndpoint) -> Result<String, ProbeError> {
        Ok("test".into())
    }

    async fn boot(&self, _: &EngineEndpoint) -> Result<(), ProbeError> {
        Ok(())
    }
}

/// An adapter that records which engines it was pointed at.
#[derive(Debug, Default)]
struct BindingEngine {
    bound: Mutex<Vec<u16>>,
}

#[async_trait]
impl EngineAdapter for BindingEngine {
    fn name(&self) -> &'static str {
        "binding"
    }

    fn kind(&self) -> EngineKind {
        EngineKind::Kilo
    }

    async fn init(&self) -> Result<InitResult, EngineError> {
        let engine =
            EngineInfo { kind: EngineKind::Kilo, status: EngineStatus::Ready, version: None };
        Ok(InitResult {
            protocol_version: 1,
            engine,
            capabilities: Capabilities::default(),
            folders: None,
        })
    }

    async fn create_session(&self, _: CreateSessionParams) -> Result<SessionSummary, EngineError> {
        Ok(SessionSummary {
            session_id: "ses_1".into(),
            title: None,
            status: None,
            updated_at: None,
            queued_prompts: None,
            parent_id: None,
            pending_permission_count: None,
            folder: None,
        })
    }

    async fn list_sessions(&self) -> Result<ListSessionsResult, EngineError> {
        Ok(ListSessionsResult { sessions: Vec::new() })
    }

    async fn delete_session(&self, p: SessionParams) -> Result<SessionAck, EngineError> {
        Ok(SessionAck { session_id: p.session_id })
    }

    async fn send_message(&self, p: SendMessageParams) -> Result<SendMessageResult, EngineError> {
        Ok(SendMessageResult { session_id: p.session_id, message_id: None })
    }

    async fn stop(&self, p: SessionParams) -> Result<SessionAck, EngineError> {
        Ok(SessionAck { session_id: p.session_id })
    }

    async fn reconnect(&self, endpoint: Endpoint) -> Result<(), EngineError> {
        self.bound.lock().unwrap().push(endpoint.port().unwrap_or(0));
        Ok(())
    }
}

/// A spawner expecting exactly `lives.len()` spawns, in order; the n-th engine crashes after
/// `lives[n]`. Returns the simulated instants of the spawns.
fn spawner(lives: Vec<Duration>) -> (MockProcessSpawner, Arc<Mutex<Vec<tokio::time::Instant>>>) {
    let spawned = Arc::new(Mutex::new(Vec::new()));
    let mut mock = MockProcessSpawner::new();
    let mut seq = Sequence::new();
    for (n, life) in lives.into_iter().enumerate() {
        let spawned = spawned.clone();
        let n = u16::try_from(n).unwrap();
        mock.expect_spawn().times(1).in_sequence(&mut seq).returning(move |spec| {
            // The password goes to the environment, fresh per start, never to argv.
            let (name, password) = &spec.secret_env[0];
            assert_eq!(name, PASSWORD_VAR);
            assert!(spec.args.iter().all(|a| a.to_string_lossy() != password.expose_secret()));
            assert_eq!(spec.cwd, PathBuf::from("/workspace"));
            spawned.lock().unwrap().push(sim_now());
            Ok(Box::new(FakeProcess::new(n, life)) as Box<dyn EngineProcess>)
        });
    }
    (mock, spawned)
}

struct Running {
    webview: MemoryWebview,
    service: tokio::task::JoinHandle<Result<(), ServiceError>>,
    engine: Arc<BindingEngine>,
}

fn start(spawner: MockProcessSpawner) -> Running {
    let config = KiloConfig::new(PathBuf::from("kilo"), PathBuf::from("/workspace"));
    let supervisor = KiloSupervisor::new(config, Arc::new(spawner), Arc::new(ReadyProbe));
    let engine = Arc::new(BindingEngine::default());
    let (_tx, rx): (_, InputReceiver) = input_channel();
    let (sink, webview) = memory();
    let service = Service::new(
        ServiceConfig::default(),
        engine.clone(),
        rx,
        Arc::new(TokioClock),
        Some(Supervision::new(Arc::new(supervisor))),
    );
    Running { webview, service: tokio::spawn(service.run(bb_service::sink::single(sink))), engine }
}

async fn send(w: &MemoryWebview, id: &str, call: V1Call) {
    w.to_service.send(Inbound::Request(V1Request::new(id, call))).await.unwrap();
}

/// The next `bb/connection` payload matching `pred` (others are skipped).
async fn connection(
    w: &mut MemoryWebview,
    pred: impl Fn(&ConnectionPayload) -> bool,
) -> ConnectionPayload {
    loop {
        match w.from_service.recv().await.expect("the service ended") {
            V1Message::Event(e) => match e.topic {
                V1Topic::Connection(c) if pred(&c) => return c,
                _ => {}
            },
            V1Message::Response(_) | V1Message::Request(_) => {}
        }
    }
}

fn gaps(spawned: &[tokio::time::Instant]) -> Vec<Duration> {
    spawned.windows(2).map(|w| w[1] - w[0]).collect()
}

#[tokio::test(start_paused = true)]
async fn crashes_back_off_doubling_then_the_breaker_opens_and_nothing_restarts() {
    let life = Duration::from_secs(2);
    let (mock, spawned) = spawner(vec![life; 3]);
    let mut run = start(mock);
    send(&run.webview, "init", V1Call::Init(Default::default())).await;
    let open = connection(&mut run.webview, |c| c.status == ConnectionStatus::Error).await;
    let reason = open.last_error.unwrap_or_default();
    assert!(reason.contains("exit code 1") && reason.contains("3 crashes"), "{reason}");
    assert!(reason.contains("not restarting"), "{reason}");
    // 500 ms after the first crash, 1 s after the second; the third opens the breaker.
    let spawned_at = spawned.lock().unwrap().clone();
    assert_eq!(
        gaps(&spawned_at),
        [life + Duration::from_millis(500), life + Duration::from_secs(1)]
    );
    assert_eq!(*run.engine.bound.lock().unwrap(), [4000, 4001, 4002]);
    // An hour later still nothing was spawned (the mock fails on a fourth spawn).
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(spawned.lock().unwrap().len(), 3);
    drop(run.webview);
    run.service.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn crashes_further_apart_than_the_window_keep_restarting() {
    // Six minutes of life each: the 10-minute window never holds three crashes.
    let life = Duration::from_secs(360);
    let (mock, spawned) = spawner(vec![life; 5]);
    let run = start(mock);
    send(&run.webview, "init", V1Call::Init(Default::default())).await;
    while run.engine.bound.lock().unwrap().len() < 5 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Crash 1 is alone in the window (500 ms); every later one has exactly one predecessor
    // in it (1 s), never two (the breaker).
    let half = Duration::from_millis(500);
    let one = Duration::from_secs(1);
    assert_eq!(gaps(&spawned.lock().unwrap()), [life + half, life + one, life + one, life + one]);
    drop(run.webview);
    run.service.await.unwrap().unwrap();
}

/// The next response, skipping events.
async fn response(w: &mut MemoryWebview, id: &str) -> bb_protocol::v1::V1Response {
    loop {
        if let V1Message::Response(r) = w.from_service.recv().await.expect("the service ended")
            && r.id == id
        {
            return r;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn after_the_breaker_calls_answer_its_reason_until_engine_restart() {
    let life = Duration::from_secs(2);
    let (mock, spawned) = spawner(vec![life, life, life, Duration::from_secs(3600)]);
    let mut run = start(mock);
    send(&run.webview, "init", V1Call::Init(Default::default())).await;
    let open = connection(&mut run.webview, |c| c.status == ConnectionStatus::Error).await;
    assert_eq!(open.restarting, Some(false), "{open:?}");
    send(&run.webview, "list", V1Call::ListSessions(Default::default())).await;
    let refused = response(&mut run.webview, "list").await;
    let error = refused.error.unwrap();
    assert_eq!(error.code, "engine_unavailable");
    assert!(error.message.contains("crash loop") && error.message.contains("engine.restart"));
    // An hour on, still three spawns: nothing restarts on its own.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(spawned.lock().unwrap().len(), 3);
    let restart = bb_protocol::v1::CommandParams {
        session_id: String::new(),
        command: "engine.restart".into(),
        args: None,
    };
    send(&run.webview, "restart", V1Call::Command(restart)).await;
    let restarted = response(&mut run.webview, "restart").await;
    assert!(restarted.ok, "{restarted:?}");
    let back = connection(&mut run.webview, |c| c.restarting == Some(true)).await;
    assert_eq!(back.status, ConnectionStatus::Connecting);
    while run.engine.bound.lock().unwrap().len() < 4 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    send(&run.webview, "list2", V1Call::ListSessions(Default::default())).await;
    assert!(response(&mut run.webview, "list2").await.ok);
    let metrics = bb_protocol::v1::CommandParams {
        session_id: String::new(),
        command: "metrics".into(),
        args: None,
    };
    send(&run.webview, "m", V1Call::Command(metrics)).await;
    let m = response(&mut run.webview, "m").await.result.unwrap();
    assert_eq!(m["output"]["kilo.cli.server.crash_count"], 3, "{m}");
    assert_eq!(m["output"]["bridge"]["breakerTrips"], 1, "{m}");
    assert_eq!(m["output"]["diagnostics"]["enginePid"], 1003, "{m}");
    assert_eq!(m["output"]["diagnostics"]["enginePort"], 4003, "{m}");
    drop(run.webview);
    run.service.await.unwrap().unwrap();
}
