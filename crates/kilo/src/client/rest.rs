//! `KiloClient`: the Kilo CLI server's REST routes the bridge uses, over the transport port.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::types::{
    CreateSession, Health, MessageWithParts, PermissionReply, PermissionRequest, PromptRequest,
    Session, StatusMap,
};
use bb_engine_client::transport::{
    EngineRequest, EngineTransport, HttpMethod, TransportError, is_path_segment,
};

/// Why a Kilo REST call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KiloError {
    /// The request failed (auth, HTTP status, connection, timeout…).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The answer did not have the expected shape.
    #[error("unexpected answer from {route}: {message}")]
    Decode {
        /// Method and path template, e.g. `GET /session/:id/message`.
        route: &'static str,
        /// What did not match.
        message: String,
    },
    /// An id that cannot be a Kilo id (it would change the request path).
    #[error("invalid {what} id {id:?}")]
    InvalidId {
        /// `session` or `permission`.
        what: &'static str,
        /// The id given.
        id: String,
    },
}

impl KiloError {
    /// Whether the engine refused the credentials.
    pub fn is_auth(&self) -> bool {
        matches!(self, Self::Transport(TransportError::Auth { .. }))
    }
}

/// REST client of one Kilo server instance (one project directory).
#[derive(Debug, Clone)]
pub struct KiloClient {
    transport: Arc<dyn EngineTransport>,
    directory: Option<String>,
}

/// Kilo ids are `ses_…`, `per_…`, `msg_…`: letters, digits, `_` and `-` only.
pub(super) fn checked_id<'a>(what: &'static str, id: &'a str) -> Result<&'a str, KiloError> {
    if is_path_segment(id) { Ok(id) } else { Err(KiloError::InvalidId { what, id: id.to_owned() }) }
}

impl KiloClient {
    /// A client of the server behind `transport`, for its default directory.
    pub fn new(transport: Arc<dyn EngineTransport>) -> Self {
        Self { transport, directory: None }
    }

    /// Scopes every request (and the event stream) to a project directory
    /// (`?directory=`).
    #[must_use]
    pub fn with_directory(mut self, directory: impl Into<String>) -> Self {
        self.directory = Some(directory.into());
        self
    }

    /// The transport underneath.
    pub fn transport(&self) -> &Arc<dyn EngineTransport> {
        &self.transport
    }

    fn scoped(&self, request: EngineRequest) -> EngineRequest {
        match &self.directory {
            Some(dir) => request.with_query("directory", dir.clone()),
            None => request,
        }
    }

    /// The `GET /event` request of this instance (for the event stream).
    pub fn event_request(&self) -> EngineRequest {
        self.scoped(EngineRequest::get("/event"))
    }

    pub(super) async fn call<T: DeserializeOwned>(
        &self,
        route: &'static str,
        request: EngineRequest,
    ) -> Result<T, KiloError> {
        let response = self.transport.request(self.scoped(request)).await?;
        serde_json::from_slice(&response.body)
            .map_err(|e| KiloError::Decode { route, message: e.to_string() })
    }

    pub(super) async fn call_empty(&self, request: EngineRequest) -> Result<(), KiloError> {
        self.transport.request(self.scoped(request)).await?;
        Ok(())
    }

    /// `GET /global/health`.
    pub async fn health(&self) -> Result<Health, KiloError> {
        self.call("GET /global/health", EngineRequest::get("/global/health")).await
    }

    /// `GET /config`: the merged configuration (boots the directory's instance).
    pub async fn config(&self) -> Result<Value, KiloError> {
        self.call("GET /config", EngineRequest::get("/config")).await
    }

    /// `POST /session`.
    pub async fn create_session(&self, params: &CreateSession) -> Result<Session, KiloError> {
        let body = serde_json::to_value(params)
            .map_err(|e| KiloError::Decode { route: "POST /session", message: e.to_string() })?;
        self.call("POST /session", EngineRequest::post("/session", body)).await
    }

    /// `GET /session`.
    pub async fn list_sessions(&self) -> Result<Vec<Session>, KiloError> {
        self.call("GET /session", EngineRequest::get("/session")).await
    }

    /// `GET /session/:id`.
    pub async fn get_session(&self, id: &str) -> Result<Session, KiloError> {
        let id = checked_id("session", id)?;
        self.call("GET /session/:id", EngineRequest::get(format!("/session/{id}"))).await
    }

    /// `DELETE /session/:id`.
    pub async fn delete_session(&self, id: &str) -> Result<bool, KiloError> {
        let id = checked_id("session", id)?;
        self.call("DELETE /session/:id", EngineRequest::delete(format!("/session/{id}"))).await
    }

    /// `POST /session/:id/prompt_async`: starts a turn and returns at once (204).
    pub async fn prompt_async(&self, id: &str, prompt: &PromptRequest) -> Result<(), KiloError> {
        let id = checked_id("session", id)?;
        let body = serde_json::to_value(prompt).map_err(|e| KiloError::Decode {
            route: "POST /session/:id/prompt_async",
            message: e.to_string(),
        })?;
        self.call_empty(EngineRequest::post(format!("/session/{id}/prompt_async"), body)).await
    }

    /// `POST /session/:id/abort`.
    pub async fn abort(&self, id: &str) -> Result<bool, KiloError> {
        let id = checked_id("session", id)?;
        let request = EngineRequest::new(HttpMethod::Post, format!("/session/{id}/abort"));
        self.call("POST /session/:id/abort", request).await
    }

    /// `GET /session/:id/message`: every message with its parts, oldest first.
    pub async fn messages(&self, id: &str) -> Result<Vec<MessageWithParts>, KiloError> {
        let id = checked_id("session", id)?;
        let request = EngineRequest::get(format!("/session/{id}/message"));
        self.call("GET /session/:id/message", request).await
    }

    /// `GET /session/status`: busy/retrying sessions (absent means idle).
    pub async fn status(&self) -> Result<StatusMap, KiloError> {
        self.call("GET /session/status", EngineRequest::get("/session/status")).await
    }

    /// `GET /permission`: pending permission requests of every session.
    pub async fn permissions(&self) -> Result<Vec<PermissionRequest>, KiloError> {
        self.call("GET /permission", EngineRequest::get("/permission")).await
    }

    /// `POST /permission/:id/reply`.
    pub async fn reply_permission(
        &self,
        permission_id: &str,
        reply: PermissionReply,
        message: Option<&str>,
    ) -> Result<bool, KiloError> {
        let id = checked_id("permission", permission_id)?;
        let mut body = json!({ "reply": reply });
        if let Some(message) = message {
            body["message"] = Value::String(message.to_owned());
        }
        let request = EngineRequest::post(format!("/permission/{id}/reply"), body);
        self.call("POST /permission/:id/reply", request).await
    }
}
