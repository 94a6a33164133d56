//! The BreadBoard REST client over the engine transport port: the `/v1` routes the sidebar
//! needs, with the error envelope decoded into [`BbError`].

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::error::BbError;
use super::wire::{
    Attachment, CommandAccepted, CreateSession, CreatedSession, FileContent, FileEntry, Health,
    SessionSummary, SnippetOptions,
};
use bb_engine_client::transport::{
    EngineRequest, EngineResponse, EngineTransport, TransportError, is_path_segment,
};

/// An answer to a permission request, in the engine's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionDecision {
    /// Allow this request only.
    AllowOnce,
    /// Allow and remember a rule.
    AllowAlways,
    /// Deny this request only.
    DenyOnce,
    /// Deny and remember.
    DenyAlways,
    /// Deny and stop the turn.
    DenyStop,
}

impl PermissionDecision {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AllowOnce => "allow-once",
            Self::AllowAlways => "allow-always",
            Self::DenyOnce => "deny-once",
            Self::DenyAlways => "deny-always",
            Self::DenyStop => "deny-stop",
        }
    }
}

/// A rule the engine persists with `allow-always`: a string pattern and its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionRule {
    /// The pattern, e.g. `src/**` or `make *`.
    pub rule: String,
    /// `project`, `session` or `global`.
    pub scope: String,
}

/// How `files/content` reads a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// The whole file, or its head/tail when asked.
    #[default]
    Cat,
    /// Head and tail with a truncation marker between them.
    Snippet,
}

/// The REST client of one BreadBoard engine.
#[derive(Debug, Clone)]
pub struct BreadboardClient {
    transport: Arc<dyn EngineTransport>,
}

/// Checks that a session id can be a path segment (the engine's ids are UUIDs).
pub(crate) fn segment(id: &str) -> Result<&str, BbError> {
    if is_path_segment(id) {
        Ok(id)
    } else {
        Err(BbError::InvalidId { id: id.chars().take(128).collect() })
    }
}

fn blank(what: &str) -> BbError {
    BbError::Refused { detail: format!("{what} must not be blank") }
}

impl BreadboardClient {
    /// A client speaking through `transport` (which holds the base URL and the token).
    pub fn new(transport: Arc<dyn EngineTransport>) -> Self {
        Self { transport }
    }

    /// The transport, shared with the event streams.
    pub fn transport(&self) -> &Arc<dyn EngineTransport> {
        &self.transport
    }

    async fn send(&self, request: EngineRequest) -> Result<EngineResponse, BbError> {
        self.transport.request(request).await.map_err(BbError::from)
    }

    async fn json<T: DeserializeOwned>(&self, request: EngineRequest) -> Result<T, BbError> {
        let route = request.path.clone();
        let response = self.send(request).await?;
        serde_json::from_slice(&response.body)
            .map_err(|e| BbError::Decode { route, message: e.to_string() })
    }

    /// `GET /health`.
    pub async fn health(&self) -> Result<Health, BbError> {
        self.json(EngineRequest::get("/health")).await
    }

    /// `POST /v1/sessions`.
    pub async fn create_session(&self, body: &CreateSession) -> Result<CreatedSession, BbError> {
        let body = serde_json::to_value(body).map_err(|e| BbError::Decode {
            route: "/v1/sessions".into(),
            message: e.to_string(),
        })?;
        self.json(EngineRequest::post("/v1/sessions", body)).await
    }

    /// `GET /v1/sessions`.
    pub async fn list_sessions(&self) -> Result<Vec<SessionSummary>, BbError> {
        self.json(EngineRequest::get("/v1/sessions")).await
    }

    /// `GET /v1/sessions/{id}`.
    pub async fn get_session(&self, id: &str) -> Result<SessionSummary, BbError> {
        self.json(EngineRequest::get(format!("/v1/sessions/{}", segment(id)?))).await
    }

    /// `DELETE /v1/sessions/{id}`. The engine awaits the current turn (and blocks while a
    /// permission is pending), so the wait is bounded by `timeout`.
    pub async fn delete_session(&self, id: &str, timeout: Duration) -> Result<(), BbError> {
        let request = EngineRequest::delete(format!("/v1/sessions/{}", segment(id)?));
        match tokio::time::timeout(timeout, self.send(request)).await {
            Ok(result) => result.map(drop),
            Err(_) => Err(BbError::Transport(TransportError::Timeout { after: timeout })),
        }
    }

    /// `POST /v1/sessions/{id}/input` (202).
    pub async fn send_input(
        &self,
        id: &str,
        content: &str,
        attachments: &[String],
    ) -> Result<(), BbError> {
        if content.trim().is_empty() {
            return Err(blank("content"));
        }
        let mut body = json!({"content": content});
        if !attachments.is_empty() {
            body["attachments"] = json!(attachments);
        }
        let path = format!("/v1/sessions/{}/input", segment(id)?);
        self.send(EngineRequest::post(path, body)).await.map(drop)
    }

    /// `POST /v1/sessions/{id}/command` (202) with an optional payload object.
    pub async fn command(
        &self,
        id: &str,
        command: &str,
        payload: Option<Map<String, Value>>,
    ) -> Result<CommandAccepted, BbError> {
        if command.trim().is_empty() {
            return Err(blank("command"));
        }
        let mut body = json!({"command": command});
        if let Some(payload) = payload {
            body["payload"] = Value::Object(payload);
        }
        let path = format!("/v1/sessions/{}/command", segment(id)?);
        self.json(EngineRequest::post(path, body)).await
    }

    /// `command stop`: ends the turn at its next step boundary.
    pub async fn stop(&self, id: &str) -> Result<CommandAccepted, BbError> {
        self.command(id, "stop", None).await
    }

    /// `command permission_decision`. The engine persists a rule only when `rule` is a string
    /// with `scope` beside it (an object is kept in metadata and no rule file is written).
    pub async fn permission_decision(
        &self,
        id: &str,
        request_id: &str,
        decision: PermissionDecision,
        rule: Option<&PermissionRule>,
    ) -> Result<CommandAccepted, BbError> {
        if request_id.trim().is_empty() {
            return Err(blank("request_id"));
        }
        let mut payload = Map::new();
        payload.insert("request_id".into(), json!(request_id));
        payload.insert("decision".into(), json!(decision.as_str()));
        if let Some(rule) = rule {
            payload.insert("rule".into(), json!(rule.rule));
            payload.insert("scope".into(), json!(rule.scope));
        }
        self.command(id, "permission_decision", Some(payload)).await
    }

    /// `command set_mode`.
    pub async fn set_mode(&self, id: &str, mode: &str) -> Result<CommandAccepted, BbError> {
        let payload = Map::from_iter([("mode".to_owned(), json!(mode))]);
        self.command(id, "set_mode", Some(payload)).await
    }

    /// `command set_model`.
    pub async fn set_model(&self, id: &str, model: &str) -> Result<CommandAccepted, BbError> {
        let payload = Map::from_iter([("model".to_owned(), json!(model))]);
        self.command(id, "set_model", Some(payload)).await
    }

    /// `command list_checkpoints` (publishes `checkpoint_list`).
    pub async fn list_checkpoints(&self, id: &str) -> Result<CommandAccepted, BbError> {
        self.command(id, "list_checkpoints", None).await
    }

    /// `command restore_checkpoint` with mode `code`, `conversation` or `both`.
    pub async fn restore_checkpoint(
        &self,
        id: &str,
        checkpoint_id: &str,
        mode: &str,
    ) -> Result<CommandAccepted, BbError> {
        let payload = Map::from_iter([
            ("checkpoint_id".to_owned(), json!(checkpoint_id)),
            ("mode".to_owned(), json!(mode)),
        ]);
        self.command(id, "restore_checkpoint", Some(payload)).await
    }

    /// `GET /v1/sessions/{id}/files?path=`.
    pub async fn list_files(&self, id: &str, path: &str) -> Result<Vec<FileEntry>, BbError> {
        let request = EngineRequest::get(format!("/v1/sessions/{}/files", segment(id)?))
            .with_query("path", path);
        self.json(request).await
    }

    /// `GET /v1/sessions/{id}/files/content`.
    pub async fn read_file(
        &self,
        id: &str,
        path: &str,
        mode: ReadMode,
        options: SnippetOptions,
    ) -> Result<FileContent, BbError> {
        let mut request =
            EngineRequest::get(format!("/v1/sessions/{}/files/content", segment(id)?))
                .with_query("path", path)
                .with_query(
                    "mode",
                    match mode {
                        ReadMode::Cat => "cat",
                        ReadMode::Snippet => "snippet",
                    },
                );
        if let Some(n) = options.head_lines {
            request = request.with_query("head_lines", n.to_string());
        }
        if let Some(n) = options.tail_lines {
            request = request.with_query("tail_lines", n.to_string());
        }
        if let Some(n) = options.max_bytes {
            request = request.with_query("max_bytes", n.to_string());
        }
        self.json(request).await
    }

    /// `GET /v1/sessions/{id}/download?artifact=`: the raw bytes.
    pub async fn download(&self, id: &str, artifact: &str) -> Result<Bytes, BbError> {
        let request = EngineRequest::get(format!("/v1/sessions/{}/download", segment(id)?))
            .with_query("artifact", artifact);
        Ok(self.send(request).await?.body)
    }

    /// `GET /v1/sessions/{id}/records`: the session's run records (for rebuilds).
    pub async fn records(&self, id: &str, offset: u64, limit: u64) -> Result<Value, BbError> {
        let request = EngineRequest::get(format!("/v1/sessions/{}/records", segment(id)?))
            .with_query("offset", offset.to_string())
            .with_query("limit", limit.to_string());
        self.json(request).await
    }

    /// `POST /v1/sessions/{id}/attachments` (multipart `files` + `metadata`).
    pub async fn upload_attachments(
        &self,
        id: &str,
        files: Vec<bb_engine_client::transport::FormFile>,
        metadata: Option<Value>,
    ) -> Result<Vec<Attachment>, BbError> {
        #[derive(serde::Deserialize)]
        struct Uploaded {
            attachments: Vec<Attachment>,
        }
        let path = format!("/v1/sessions/{}/attachments", segment(id)?);
        let mut form = bb_engine_client::transport::Form::default();
        for file in files {
            form.files.push(("files".to_owned(), file));
        }
        if let Some(metadata) = metadata {
            form.fields.push(("metadata".to_owned(), metadata.to_string()));
        }
        let request =
            EngineRequest::new(bb_engine_client::transport::HttpMethod::Post, path).with_form(form);
        let uploaded: Uploaded = self.json(request).await?;
        Ok(uploaded.attachments)
    }
}
