//! `Endpoint`: where a (re)started engine is reached and how the bridge authenticates, the
//! same type for every engine, so the engine port carries no engine-specific types.

use bb_engine_client::transport::EngineAuth;

/// Where an engine is reached. Engine-neutral: a Kilo server, a BreadBoard CLI bridge or any
/// other engine serving HTTP is an [`Endpoint::Http`]; an agent spoken to over a child's
/// stdio (ACP) is re-pointed by its own adapter and adds its variant here when it needs one.
/// `Debug` never shows a secret (the credentials are `SecretString`s).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Endpoint {
    /// An engine serving HTTP on a loopback URL.
    Http {
        /// Base URL, e.g. `http://127.0.0.1:4096`.
        base_url: String,
        /// How to authenticate (none, Basic or Bearer).
        auth: EngineAuth,
    },
}

impl Endpoint {
    /// An HTTP endpoint.
    pub fn http(base_url: impl Into<String>, auth: EngineAuth) -> Self {
        Endpoint::Http { base_url: base_url.into(), auth }
    }

    /// The base URL, for logs and diagnostics.
    pub fn base_url(&self) -> &str {
        match self {
            Endpoint::Http { base_url, .. } => base_url,
        }
    }

    /// The TCP port of the URL, when it names one.
    pub fn port(&self) -> Option<u16> {
        let (_, rest) = self.base_url().split_once("://")?;
        let authority = rest.split('/').next()?;
        authority.rsplit_once(':')?.1.parse().ok()
    }
}
