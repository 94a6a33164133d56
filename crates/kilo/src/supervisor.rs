//! The Kilo CLI server supervisor: starts `kilo serve` for a workspace through the process
//! spawner port, learns its URL from the engine's own "listening on" line and health-checks
//! it through the [`HealthProbe`] port ([`crate::KiloProbe`] over HTTP); the runtime paces
//! its restarts ([`KiloSupervisor`] is its `bb_service::EngineStarter`).
//!
//! * **Port discovery.** The engine is started with `--port 0 --hostname 127.0.0.1` and the
//!   supervisor reads the URL the engine itself prints (`kilo server listening on
//!   http://127.0.0.1:PORT`). Kilo 7.7.9 tries 4096 first for `--port 0` and falls back to a
//!   random port; either way the engine binds the socket itself and reports it, so there is
//!   no bind-and-release race. A URL that is not loopback is refused.
//! * **Secrets.** A fresh 256-bit password per start, held as a [`secrecy::SecretString`],
//!   set as `KILO_SERVER_PASSWORD` in the child's environment (never argv) and redacted from
//!   every engine log line.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use secrecy::SecretString;

use bb_supervisor::env::inherit_allowed;
use bb_supervisor::{EngineProcess, ExitInfo, ProcessSpawner, RestartPolicy, SpawnSpec};

/// The environment variable the engine reads its server password from.
pub const PASSWORD_VAR: &str = "KILO_SERVER_PASSWORD";
/// The environment variable the engine reads its Basic-auth username from.
pub const USERNAME_VAR: &str = "KILO_SERVER_USERNAME";
/// The username the supervisor configures.
pub const USERNAME: &str = "kilo";

/// Where and how to reach a running engine. `Debug` never shows the password.
#[derive(Clone)]
pub struct EngineEndpoint {
    /// Base URL, e.g. `http://127.0.0.1:4096`.
    pub base_url: String,
    /// Basic-auth username.
    pub username: String,
    /// Basic-auth password (`None`: the engine is unsecured).
    pub password: Option<SecretString>,
}

impl fmt::Debug for EngineEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineEndpoint")
            .field("base_url", &self.base_url)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

/// Why a health probe failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// Not reachable yet or answered an error worth retrying.
    #[error("engine not ready: {0}")]
    Unavailable(String),
    /// The engine refused our credentials (401/403): never retried.
    #[error("engine refused the credentials (HTTP {status})")]
    Auth {
        /// The HTTP status.
        status: u16,
    },
    /// The engine answered something that is not what a Kilo server answers.
    #[error("unexpected engine answer: {0}")]
    Unexpected(String),
}

/// Health checks of a freshly started engine (implemented over HTTP by the service).
#[async_trait]
pub trait HealthProbe: Send + Sync + fmt::Debug {
    /// `GET /global/health`; the engine version on success.
    async fn health(&self, endpoint: &EngineEndpoint) -> Result<String, ProbeError>;
    /// `GET /config`, which boots the workspace instance so the first real request is fast.
    async fn boot(&self, endpoint: &EngineEndpoint) -> Result<(), ProbeError>;
}

/// How to start the engine.
#[derive(Debug, Clone)]
pub struct KiloConfig {
    /// The `kilo` executable.
    pub program: PathBuf,
    /// The workspace: the engine's working directory and project root.
    pub workspace: PathBuf,
    /// Parent environment to filter through the allow-list (usually `std::env::vars_os()`).
    pub parent_env: Vec<(OsString, OsString)>,
    /// Extra variables set after the allow-list (the user's engine configuration).
    pub extra_env: Vec<(OsString, OsString)>,
    /// Bound on spawn → "listening" → healthy → instance booted.
    pub start_timeout: Duration,
    /// Bound on one probe request.
    pub probe_timeout: Duration,
    /// Pause between health probes while the engine starts.
    pub probe_interval: Duration,
    /// Grace period between TERM and KILL.
    pub stop_grace: Duration,
    /// Restart pacing and breaker.
    pub restart: RestartPolicy,
}

impl KiloConfig {
    /// Defaults: 60 s start bound, 5 s probes every 250 ms, 5 s grace, default restart policy.
    pub fn new(program: PathBuf, workspace: PathBuf) -> Self {
        Self {
            program,
            workspace,
            parent_env: Vec::new(),
            extra_env: Vec::new(),
            start_timeout: Duration::from_secs(60),
            probe_timeout: Duration::from_secs(5),
            probe_interval: Duration::from_millis(250),
            stop_grace: Duration::from_secs(5),
            restart: RestartPolicy::default(),
        }
    }
}

/// Why a start failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The process could not be created.
    #[error("cannot start the engine {program}: {source}")]
    Spawn {
        /// The executable.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The process exited before it was ready.
    #[error("the engine exited during start-up ({0})")]
    Exited(ExitInfo),
    /// The output streams closed before the engine said where it listens.
    #[error("the engine closed its output without reporting a listening URL")]
    NoUrl,
    /// The engine reported a URL that is not on loopback.
    #[error("the engine listens on a non-loopback URL: {0}")]
    NotLoopback(String),
    /// Not ready within the start bound.
    #[error("the engine was not ready within {0:?}")]
    Timeout(Duration),
    /// A health probe failed in a way retrying won't fix.
    #[error("engine health check failed: {0}")]
    Probe(#[from] ProbeError),
}

/// A started, healthy engine.
#[derive(Debug)]
pub struct RunningEngine {
    /// How to reach it.
    pub endpoint: EngineEndpoint,
    /// The engine version it reported.
    pub version: String,
    /// The process.
    pub process: Box<dyn EngineProcess>,
}

/// Starts one Kilo server for one workspace (each start with a fresh password); the caller
/// paces restarts with a [`bb_supervisor::CrashHistory`] built from `config().restart`.
#[derive(Debug)]
pub struct KiloSupervisor {
    config: KiloConfig,
    spawner: Arc<dyn ProcessSpawner>,
    probe: Arc<dyn HealthProbe>,
}

impl KiloSupervisor {
    /// A supervisor; nothing starts until [`KiloSupervisor::start`].
    pub fn new(
        config: KiloConfig,
        spawner: Arc<dyn ProcessSpawner>,
        probe: Arc<dyn HealthProbe>,
    ) -> Self {
        Self { config, spawner, probe }
    }

    /// The configuration.
    pub fn config(&self) -> &KiloConfig {
        &self.config
    }

    /// One start attempt with a fresh password: spawn, read the listening URL, probe health,
    /// boot the instance. On failure the process (if any) is terminated.
    pub async fn start(&self) -> Result<RunningEngine, StartError> {
        let password = generate_password();
        let spec = self.spawn_spec(password.clone());
        let program = spec.program.display().to_string();
        let mut process =
            self.spawner.spawn(spec).map_err(|source| StartError::Spawn { program, source })?;
        let bound = self.config.start_timeout;
        let result = tokio::time::timeout(bound, self.bring_up(process.as_mut(), password)).await;
        let result = result.unwrap_or(Err(StartError::Timeout(bound)));
        match result {
            Ok((endpoint, version)) => Ok(RunningEngine { endpoint, version, process }),
            Err(err) => {
                if let Err(io) = process.terminate(self.config.stop_grace).await {
                    tracing::warn!(%io, "stopping the failed engine failed");
                }
                Err(err)
            }
        }
    }

    async fn bring_up(
        &self,
        process: &mut dyn EngineProcess,
        password: SecretString,
    ) -> Result<(EngineEndpoint, String), StartError> {
        let base_url = loop {
            let Some(line) = process.next_line().await else {
                return Err(match process.wait().await {
                    Ok(info) => StartError::Exited(info),
                    Err(_) => StartError::NoUrl,
                });
            };
            if let Some(url) = parse_listening_line(&line.text) {
                break url?;
            }
        };
        let endpoint =
            EngineEndpoint { base_url, username: USERNAME.to_owned(), password: Some(password) };
        let probe_timeout = self.config.probe_timeout;
        let probes = async {
            let version = loop {
                match tokio::time::timeout(probe_timeout, self.probe.health(&endpoint)).await {
                    Ok(Ok(version)) => break version,
                    Ok(Err(ProbeError::Unavailable(why))) => {
                        tracing::debug!(%why, "engine not healthy yet");
                    }
                    Ok(Err(fatal)) => return Err(StartError::Probe(fatal)),
                    Err(_) => tracing::debug!("health probe timed out"),
                }
                tokio::time::sleep(self.config.probe_interval).await;
            };
            self.probe.boot(&endpoint).await?;
            Ok(version)
        };
        tokio::select! {
            version = probes => Ok((endpoint, version?)),
            exit = process.wait() => Err(match exit {
                Ok(info) => StartError::Exited(info),
                Err(_) => StartError::NoUrl,
            }),
        }
    }

    fn spawn_spec(&self, password: SecretString) -> SpawnSpec {
        let mut env = inherit_allowed(self.config.parent_env.iter().cloned());
        env.extend(self.config.extra_env.iter().cloned());
        env.retain(|(k, _)| k != PASSWORD_VAR && k != USERNAME_VAR);
        env.push((USERNAME_VAR.into(), USERNAME.into()));
        let args = [
            "serve",
            "--port",
            "0",
            "--hostname",
            "127.0.0.1",
            "--print-logs",
            "--log-level",
            "WARN",
        ];
        SpawnSpec {
            program: self.config.program.clone(),
            args: args.iter().map(OsString::from).collect(),
            cwd: self.config.workspace.clone(),
            env,
            secret_env: vec![(PASSWORD_VAR.to_owned(), password)],
        }
    }
}

/// A fresh 256-bit password, hex encoded.
pub fn generate_password() -> SecretString {
    let bytes: [u8; 32] = rand::random();
    let mut hex = String::with_capacity(64);
    for b in bytes {
        hex.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(b & 0xf)]));
    }
    SecretString::from(hex)
}

/// Finds the URL in `... listening on http://HOST:PORT`; `None` when the line is something
/// else, an error when the URL is not on loopback.
pub fn parse_listening_line(line: &str) -> Option<Result<String, StartError>> {
    let (_, rest) = line.split_once("listening on ")?;
    let url = rest.split_whitespace().next()?.trim_end_matches('/');
    let authority = url.strip_prefix("http://")?;
    let (host, port) = authority.rsplit_once(':')?;
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let loopback = matches!(host, "127.0.0.1" | "localhost" | "[::1]");
    Some(if loopback { Ok(url.to_owned()) } else { Err(StartError::NotLoopback(url.to_owned())) })
}

/// A Kilo server's endpoint as the runtime's engine-neutral one: Basic auth when it has a
/// password.
impl From<EngineEndpoint> for bb_service::Endpoint {
    fn from(endpoint: EngineEndpoint) -> Self {
        let auth = match endpoint.password {
            Some(password) => {
                bb_engine_client::transport::EngineAuth::Basic { user: endpoint.username, password }
            }
            None => bb_engine_client::transport::EngineAuth::None,
        };
        bb_service::Endpoint::Http { base_url: endpoint.base_url, auth }
    }
}
