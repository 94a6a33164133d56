//! The engine starter port: how the runtime starts (and restarts) the engine it supervises,
//! whatever the engine. Each engine crate implements it (Kilo: spawn `kilo serve`, read
//! where it listens, probe its health); the runtime only paces restarts and opens the
//! crash-loop breaker ([`bb_supervisor::CrashHistory`]).

use std::fmt;

use async_trait::async_trait;
use bb_supervisor::{EngineProcess, RestartPolicy};

use crate::Endpoint;
use crate::engine::EngineError;

/// A started engine, ready for requests.
#[derive(Debug)]
pub struct StartedEngine {
    /// Where the adapter reaches it ([`crate::EngineAdapter::reconnect`]).
    pub endpoint: Endpoint,
    /// The version it reported.
    pub version: String,
    /// Its process: the runtime waits for its exit and stops it at the end.
    pub process: Box<dyn EngineProcess>,
}

/// Starts the engine the bridge supervises. `#[async_trait]`: used as `dyn`.
#[async_trait]
pub trait EngineStarter: Send + Sync + fmt::Debug {
    /// One start attempt: a running engine, or why not (`engine_auth` when it refused the
    /// bridge's credentials, else `engine_unavailable` with the reason). A failed attempt
    /// leaves no process behind.
    async fn start(&self) -> Result<StartedEngine, EngineError>;

    /// How restarts are paced and when the crash-loop breaker opens.
    fn restart_policy(&self) -> RestartPolicy;
}
