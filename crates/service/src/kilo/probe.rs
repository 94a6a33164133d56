//! The supervisor's health probe over HTTP: `GET /global/health`, then `GET /config`.

use async_trait::async_trait;
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport, TransportError};
use bb_supervisor::kilo::EngineEndpoint;
use bb_supervisor::{HealthProbe, ProbeError};

use super::rest;
use crate::engine::EngineError;

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

fn probe_error(err: EngineError) -> ProbeError {
    match err {
        EngineError::Auth { status } => ProbeError::Auth { status },
        EngineError::Unavailable(why) => ProbeError::Unavailable(why),
        EngineError::Timeout => ProbeError::Unavailable("timed out".into()),
        other => ProbeError::Unexpected(other.to_string()),
    }
}

#[async_trait]
impl HealthProbe for KiloProbe {
    async fn health(&self, endpoint: &EngineEndpoint) -> Result<String, ProbeError> {
        let transport = transport_for(endpoint, HttpOptions::default())
            .map_err(|e| ProbeError::Unexpected(e.to_string()))?;
        // Until the start bound runs out, anything but refused credentials is "not yet".
        rest::health(&transport).await.map_err(|err| match probe_error(err) {
            ProbeError::Unexpected(why) => ProbeError::Unavailable(why),
            other => other,
        })
    }

    async fn boot(&self, endpoint: &EngineEndpoint) -> Result<(), ProbeError> {
        let transport = transport_for(endpoint, HttpOptions::default())
            .map_err(|e| ProbeError::Unexpected(e.to_string()))?;
        match rest::config(&transport).await.map_err(probe_error)? {
            serde_json::Value::Object(_) => Ok(()),
            _ => Err(ProbeError::Unexpected("GET /config did not answer an object".into())),
        }
    }
}
