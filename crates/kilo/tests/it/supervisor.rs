//! The Kilo supervisor against real processes (`fixtures/engine/fake_kilo.py`): it reads the
//! URL the engine reports, and its start failures are typed and leave nothing running.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bb_kilo::supervisor::{
    EngineEndpoint, HealthProbe, KiloConfig, KiloSupervisor, ProbeError, StartError,
};
use bb_supervisor::TokioSpawner;
use secrecy::ExposeSecret;

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().next().map(str::to_owned))
        })
        .is_some_and(|state| state != "Z" && state != "X")
}

/// A probe that answers without HTTP.
#[derive(Debug)]
struct FakeProbe(Result<String, ProbeError>);

#[async_trait]
impl HealthProbe for FakeProbe {
    async fn health(&self, endpoint: &EngineEndpoint) -> Result<String, ProbeError> {
        assert!(endpoint.base_url.starts_with("http://127.0.0.1:"));
        assert_eq!(endpoint.password.as_ref().unwrap().expose_secret().len(), 64);
        self.0.clone()
    }

    async fn boot(&self, _: &EngineEndpoint) -> Result<(), ProbeError> {
        Ok(())
    }
}

fn fake_kilo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/engine/fake_kilo.py")
        .canonicalize()
        .unwrap()
}

fn supervisor(program: PathBuf, mode: &str, probe: Result<String, ProbeError>) -> KiloSupervisor {
    let mut config = KiloConfig::new(program, std::env::temp_dir());
    config.parent_env = std::env::vars_os().filter(|(k, _)| k == "PATH").collect();
    config.extra_env = vec![("KILO_FAKE_MODE".into(), mode.into())];
    config.start_timeout = Duration::from_secs(20);
    config.stop_grace = Duration::from_secs(2);
    KiloSupervisor::new(config, Arc::new(TokioSpawner::default()), Arc::new(FakeProbe(probe)))
}

#[tokio::test]
async fn start_reads_the_url_the_engine_reports() {
    let sup = supervisor(fake_kilo(), "ok", Ok("9.9.9".into()));
    let mut engine = sup.start().await.unwrap();
    assert_eq!(engine.version, "9.9.9");
    let port: u16 = engine.endpoint.base_url.rsplit_once(':').unwrap().1.parse().unwrap();
    assert!(port > 0);
    let pid = engine.process.pid().unwrap();
    assert!(alive(pid));
    engine.process.terminate(Duration::from_secs(2)).await.unwrap();
    assert!(!alive(pid));
}

#[tokio::test]
async fn start_failures_are_typed_and_leave_nothing_running() {
    let sup = supervisor(fake_kilo(), "crash", Ok("x".into()));
    assert!(matches!(sup.start().await, Err(StartError::Exited(info)) if info.code == Some(3)));

    let sup = supervisor(fake_kilo(), "ok", Err(ProbeError::Auth { status: 401 }));
    assert!(matches!(sup.start().await, Err(StartError::Probe(ProbeError::Auth { status: 401 }))));

    let sup = supervisor("/nonexistent/kilo".into(), "ok", Ok("x".into()));
    assert!(matches!(sup.start().await, Err(StartError::Spawn { .. })));

    // Never says where it listens: bounded by the start timeout, then stopped.
    let mut config = KiloConfig::new(fake_kilo(), std::env::temp_dir());
    config.parent_env = std::env::vars_os().filter(|(k, _)| k == "PATH").collect();
    config.extra_env = vec![("KILO_FAKE_MODE".into(), "silent".into())];
    config.start_timeout = Duration::from_millis(500);
    let sup = KiloSupervisor::new(
        config,
        Arc::new(TokioSpawner::default()),
        Arc::new(FakeProbe(Ok("x".into()))),
    );
    assert!(matches!(sup.start().await, Err(StartError::Timeout(_))));
}
