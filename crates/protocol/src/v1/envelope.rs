//! The v1 envelope (`req`/`res`/`evt` with `v: 1`), the method table and constructors.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::params::*;
use super::results::*;
use super::topics::V1Topic;
use crate::macros::define_calls;
use crate::marker::{EvtTag, ProtocolV1, ReqTag, ResTag};
use crate::reject::Rejection;

define_calls! {
    /// A typed v1 request body: the method name and its params.
    call V1Call;
    /// The v1 request methods.
    method V1Method;
    /// `bb.init`: handshake; returns the engine and capabilities.
    Init = "bb.init" => InitParams, InitResult;
    /// `bb.createSession`.
    CreateSession = "bb.createSession" => CreateSessionParams, SessionSummary;
    /// `bb.listSessions`.
    ListSessions = "bb.listSessions" => NoParams, ListSessionsResult;
    /// `bb.selectSession`.
    SelectSession = "bb.selectSession" => SessionParams, SessionAck;
    /// `bb.deleteSession`.
    DeleteSession = "bb.deleteSession" => SessionParams, SessionAck;
    /// `bb.sendMessage`.
    SendMessage = "bb.sendMessage" => SendMessageParams, SendMessageResult;
    /// `bb.stop`.
    Stop = "bb.stop" => SessionParams, SessionAck;
    /// `bb.command`.
    Command = "bb.command" => CommandParams, CommandResult;
    /// `bb.approvePermission`.
    ApprovePermission = "bb.approvePermission" => ApprovePermissionParams, SessionAck;
    /// `bb.listFiles`.
    ListFiles = "bb.listFiles" => ListFilesParams, ListFilesResult;
    /// `bb.readFileSnippet`.
    ReadFileSnippet = "bb.readFileSnippet" => ReadFileSnippetParams, FileSnippetResult;
    /// `bb.openDiff`.
    OpenDiff = "bb.openDiff" => OpenDiffParams, SessionAck;
    /// `bb.downloadArtifact`.
    DownloadArtifact = "bb.downloadArtifact" => DownloadArtifactParams, DownloadArtifactResult;
    /// `bb.visibility`: the webview was shown or hidden (events are held while hidden).
    Visibility = "bb.visibility" => VisibilityParams, VisibilityResult;
    /// `bb.history`: older turns of a session a paged resync left out.
    History = "bb.history" => HistoryParams, HistoryResult;
}

/// A v1 request: `{v: 1, kind: "req", id, method, params}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct V1Request {
    /// Always 1.
    pub v: ProtocolV1,
    /// Always `"req"`.
    pub kind: ReqTag,
    /// Request id, echoed by the response.
    pub id: String,
    /// Method and params.
    #[serde(flatten)]
    pub call: V1Call,
}

/// The error of a failed v1 response: `{code, message, details?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct V1Error {
    /// Stable machine-readable code (the rejection codes, or a bridge-defined one).
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// A v1 response: `{v: 1, kind: "res", id, ok, result?, error?}`. Built through
/// [`V1Response::success`] / [`V1Response::failure`], `ok` always agrees with which of
/// `result`/`error` is set; the decoder rejects messages where it does not.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct V1Response {
    /// Always 1.
    pub v: ProtocolV1,
    /// Always `"res"`.
    pub kind: ResTag,
    /// The id of the request answered.
    pub id: String,
    /// Whether the request succeeded.
    pub ok: bool,
    /// The method's result, when `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error, when not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<V1Error>,
}

/// A v1 event: `{v: 1, kind: "evt", topic, payload}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct V1Event {
    /// Always 1.
    pub v: ProtocolV1,
    /// Always `"evt"`.
    pub kind: EvtTag,
    /// Topic and payload.
    #[serde(flatten)]
    pub topic: V1Topic,
}

/// Any v1 message.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum V1Message {
    /// `kind: "req"`.
    Request(V1Request),
    /// `kind: "res"`.
    Response(V1Response),
    /// `kind: "evt"`.
    Event(V1Event),
}

impl V1Request {
    /// A request with this id.
    pub fn new(id: impl Into<String>, call: V1Call) -> Self {
        V1Request { v: ProtocolV1, kind: ReqTag, id: id.into(), call }
    }
}

impl V1Error {
    /// An error without details.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        V1Error { code: code.into(), message: message.into(), details: None }
    }
}

impl From<&Rejection> for V1Error {
    fn from(rejection: &Rejection) -> Self {
        V1Error::new(rejection.code.as_str(), rejection.detail.clone())
    }
}

impl V1Response {
    /// A successful response carrying `result` (`Value::Null` for methods without one).
    pub fn success(id: impl Into<String>, result: Value) -> Self {
        V1Response {
            v: ProtocolV1,
            kind: ResTag,
            id: id.into(),
            ok: true,
            result: Some(result),
            error: None,
        }
    }

    /// A successful response carrying a typed result.
    pub fn success_with<T: Serialize>(
        id: impl Into<String>,
        result: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(V1Response::success(id, serde_json::to_value(result)?))
    }

    /// A failed response.
    pub fn failure(id: impl Into<String>, error: V1Error) -> Self {
        V1Response {
            v: ProtocolV1,
            kind: ResTag,
            id: id.into(),
            ok: false,
            result: None,
            error: Some(error),
        }
    }
}

impl V1Event {
    /// An event on a topic.
    pub fn new(topic: V1Topic) -> Self {
        V1Event { v: ProtocolV1, kind: EvtTag, topic }
    }
}

impl Rejection {
    /// The error response owed to the sender, when the rejected message was a request whose
    /// id could be read.
    pub fn v1_response(&self) -> Option<V1Response> {
        let id = self.id.as_deref()?;
        Some(V1Response::failure(id, V1Error::from(self)))
    }
}
