//! The Kilo routes beyond the session basics: questions, diffs, fork/revert/unrevert,
//! summarize, todos, MCP, the engine's slash commands and its providers. Answers the bridge
//! only passes on stay `serde_json::Value`.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::rest::{KiloClient, KiloError, checked_id};
use super::types::Session;
use bb_engine_client::transport::{EngineRequest, HttpMethod};

/// A pending question (`GET /question`, `question.asked`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct QuestionRequest {
    /// `que_…`
    pub id: String,
    /// The session asking.
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// The questions, as sent.
    #[serde(default)]
    pub questions: Vec<Value>,
}

/// One file of `GET /session/:id/diff`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FileDiff {
    /// The file, relative to the project.
    #[serde(default)]
    pub file: String,
    /// A unified diff.
    #[serde(default)]
    pub patch: Option<String>,
    /// Lines added.
    #[serde(default)]
    pub additions: f64,
    /// Lines removed.
    #[serde(default)]
    pub deletions: f64,
    /// `added`, `deleted`, `modified`.
    #[serde(default)]
    pub status: Option<String>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl KiloClient {
    /// `GET /question`: pending questions of every session.
    pub async fn questions(&self) -> Result<Vec<QuestionRequest>, KiloError> {
        self.call("GET /question", EngineRequest::get("/question")).await
    }

    /// `POST /question/:id/reply` with one answer (selected labels) per question.
    pub async fn reply_question(
        &self,
        id: &str,
        answers: Vec<Vec<String>>,
    ) -> Result<bool, KiloError> {
        let id = checked_id("question", id)?;
        let request =
            EngineRequest::post(format!("/question/{id}/reply"), json!({ "answers": answers }));
        self.call("POST /question/:id/reply", request).await
    }

    /// `POST /question/:id/reject`.
    pub async fn reject_question(&self, id: &str) -> Result<bool, KiloError> {
        let id = checked_id("question", id)?;
        let request = EngineRequest::new(HttpMethod::Post, format!("/question/{id}/reject"));
        self.call("POST /question/:id/reject", request).await
    }

    /// `GET /session/:id/diff`.
    pub async fn diff(&self, id: &str) -> Result<Vec<FileDiff>, KiloError> {
        let id = checked_id("session", id)?;
        self.call("GET /session/:id/diff", EngineRequest::get(format!("/session/{id}/diff"))).await
    }

    /// `POST /session/:id/fork` (at `message_id`, or the whole session).
    pub async fn fork(&self, id: &str, message_id: Option<&str>) -> Result<Session, KiloError> {
        let id = checked_id("session", id)?;
        let mut body = json!({});
        if let Some(m) = message_id {
            body["messageID"] = json!(checked_id("message", m)?);
        }
        self.call(
            "POST /session/:id/fork",
            EngineRequest::post(format!("/session/{id}/fork"), body),
        )
        .await
    }

    /// `POST /session/:id/revert` to before `message_id`.
    pub async fn revert(&self, id: &str, message_id: &str) -> Result<Session, KiloError> {
        let id = checked_id("session", id)?;
        let body = json!({ "messageID": checked_id("message", message_id)? });
        let request = EngineRequest::post(format!("/session/{id}/revert"), body);
        self.call("POST /session/:id/revert", request).await
    }

    /// `POST /session/:id/unrevert`.
    pub async fn unrevert(&self, id: &str) -> Result<Session, KiloError> {
        let id = checked_id("session", id)?;
        let request = EngineRequest::new(HttpMethod::Post, format!("/session/{id}/unrevert"));
        self.call("POST /session/:id/unrevert", request).await
    }

    /// `POST /session/:id/summarize` with a model.
    pub async fn summarize(
        &self,
        id: &str,
        provider_id: &str,
        model_id: &str,
    ) -> Result<bool, KiloError> {
        let id = checked_id("session", id)?;
        let body = json!({ "providerID": provider_id, "modelID": model_id });
        let request = EngineRequest::post(format!("/session/{id}/summarize"), body);
        self.call("POST /session/:id/summarize", request).await
    }

    /// `GET /session/:id/todo`.
    pub async fn todo(&self, id: &str) -> Result<Value, KiloError> {
        let id = checked_id("session", id)?;
        self.call("GET /session/:id/todo", EngineRequest::get(format!("/session/{id}/todo"))).await
    }

    /// `GET /mcp`: MCP servers and their status.
    pub async fn mcp(&self) -> Result<Value, KiloError> {
        self.call("GET /mcp", EngineRequest::get("/mcp")).await
    }

    /// `POST /mcp {name, config}`.
    pub async fn mcp_add(&self, name: &str, config: Value) -> Result<Value, KiloError> {
        let request = EngineRequest::post("/mcp", json!({ "name": name, "config": config }));
        self.call("POST /mcp", request).await
    }

    /// `GET /command`: the engine's slash commands.
    pub async fn commands(&self) -> Result<Vec<Value>, KiloError> {
        self.call("GET /command", EngineRequest::get("/command")).await
    }

    /// `POST /session/:id/command`: runs a slash command (answers after the turn).
    pub async fn run_command(
        &self,
        id: &str,
        command: &str,
        arguments: &str,
    ) -> Result<Value, KiloError> {
        let id = checked_id("session", id)?;
        let body = json!({ "command": command, "arguments": arguments });
        let request = EngineRequest::post(format!("/session/{id}/command"), body);
        self.call("POST /session/:id/command", request).await
    }

    /// `GET /config/providers`: `{providers: [{id, models: {id: …}}], default}`.
    pub async fn providers(&self) -> Result<Value, KiloError> {
        self.call("GET /config/providers", EngineRequest::get("/config/providers")).await
    }

    /// `POST /session` with a raw body (model, permission rules, title).
    pub async fn create_session_with(&self, body: Value) -> Result<Session, KiloError> {
        self.call("POST /session", EngineRequest::post("/session", body)).await
    }

    /// `POST /session/:id/prompt_async` with raw parts (text and file parts) and an
    /// optional model (`providerID`, `modelID`).
    pub async fn prompt_parts(
        &self,
        id: &str,
        parts: Vec<Value>,
        model: Option<(&str, &str)>,
    ) -> Result<(), KiloError> {
        let id = checked_id("session", id)?;
        let mut body = json!({ "parts": parts });
        if let Some((provider, model)) = model {
            body["model"] = json!({ "providerID": provider, "modelID": model });
        }
        let request = EngineRequest::post(format!("/session/{id}/prompt_async"), body);
        self.call_empty(request).await
    }
}
