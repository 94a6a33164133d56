//! The supervisor's health probe over HTTP: `GET /global/health`, then `GET /config`.

use std::sync::Arc;

use crate::client::{KiloClient, KiloError};
use crate::supervisor::EngineEndpoint;
use crate::supervisor::{HealthProbe, ProbeError};
use async_trait::async_trait;
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport, TransportError};

/// [`HealthProbe`] for a Kilo server.
#[derive(Debug, Clone, Copy, Default)]
pub struct KiloProbe;

/// The transport for an endpoint (Basic auth when it has a password).
pub(crate) fn transport_for(
    endpoint: &EngineEndpoint,
    options: HttpOptions,
) -> Result<HttpTransport, TransportError> {
    let auth = match &endpoint.password {
        Some(password) => {
            EngineAuth::Basic { user: endpoint.username.clone(), password: password.clone() }
        }
        None => EngineAuth::None,
    };
    HttpTransport::new(&endpoint.base_url, auth, options)
}

fn client(endpoint: &EngineEndpoint) -> Result<KiloClient, ProbeError> {
    let transport = transport_for(endpoint, HttpOptions::default())
        .map_err(|e| ProbeError::Unexpected(e.to_string()))?;
    Ok(KiloClient::new(Arc::new(transport)))
}

fn probe_error(err: KiloError) -> ProbeError {
    match err {
        KiloError::Transport(TransportError::Auth { status }) => ProbeError::Auth { status },
        other => ProbeError::Unavailable(other.to_string()),
    }
}

#[async_trait]
impl HealthProbe for KiloProbe {
    /// Until the start bound runs out, anything but refused credentials means "not yet".
    async fn health(&self, endpoint: &EngineEndpoint) -> Result<String, ProbeError> {
        let health = client(endpoint)?.health().await.map_err(probe_error)?;
        if !health.healthy {
            return Err(ProbeError::Unavailable("the engine reports itself unhealthy".into()));
        }
        Ok(health.version.unwrap_or_else(|| "unknown".into()))
    }

    async fn boot(&self, endpoint: &EngineEndpoint) -> Result<(), ProbeError> {
        match client(endpoint)?.config().await {
            Ok(serde_json::Value::Object(_)) => Ok(()),
            Ok(_) => Err(ProbeError::Unexpected("GET /config did not answer an object".into())),
            Err(KiloError::Transport(TransportError::Auth { status })) => {
                Err(ProbeError::Auth { status })
            }
            Err(other) => Err(ProbeError::Unexpected(other.to_string())),
        }
    }
}

/// The Kilo supervisor as the runtime's engine starter.
#[async_trait]
impl bb_service::EngineStarter for crate::supervisor::KiloSupervisor {
    async fn start(&self) -> Result<bb_service::StartedEngine, bb_service::EngineError> {
        match crate::supervisor::KiloSupervisor::start(self).await {
            Ok(engine) => Ok(bb_service::StartedEngine {
                endpoint: engine.endpoint.into(),
                version: engine.version,
                process: engine.process,
            }),
            Err(crate::supervisor::StartError::Probe(ProbeError::Auth { status })) => {
                Err(bb_service::EngineError::Auth { status })
            }
            Err(err) => Err(bb_service::EngineError::Unavailable(err.to_string())),
        }
    }

    fn restart_policy(&self) -> bb_supervisor::RestartPolicy {
        self.config().restart
    }
}
