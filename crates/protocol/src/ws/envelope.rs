//! The WebSocket envelope (`request`/`response`/`event`), its method table and constructors.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::events::WsEventKind;
use super::params::*;
use super::results::*;
use crate::macros::define_calls;
use crate::marker::{EventTag, RequestTag, ResponseTag};
use crate::reject::Rejection;
use crate::v1::{V1Call, V1Method};

define_calls! {
    /// A typed WebSocket request body: the method name and its params.
    call WsCall;
    /// The WebSocket request methods.
    method WsMethod;
    /// `dialog.open`: show a desktop open dialog.
    DialogOpen = "dialog.open" => DialogOpenParams, DialogOpenResult;
    /// `shell.openPath`: open a path with the system handler.
    ShellOpenPath = "shell.openPath" => OpenPathParams, ();
    /// `acp_connect`: start an ACP agent.
    AcpConnect = "acp_connect" => AcpConnectParams, AcpConnectionInfo;
    /// `acp_disconnect`: stop an ACP agent.
    AcpDisconnect = "acp_disconnect" => AcpDisconnectParams, ();
    /// `acp_session_new`: returns the new session id.
    AcpSessionNew = "acp_session_new" => AcpSessionNewParams, String;
    /// `acp_session_load`.
    AcpSessionLoad = "acp_session_load" => AcpSessionLoadParams, ();
    /// `acp_session_prompt`.
    AcpSessionPrompt = "acp_session_prompt" => AcpSessionPromptParams, AcpPromptResult;
    /// `acp_session_cancel`.
    AcpSessionCancel = "acp_session_cancel" => AcpSessionCancelParams, ();
    /// `acp_permission_reply`.
    AcpPermissionReply = "acp_permission_reply" => AcpPermissionReplyParams, ();
    /// `acp_session_list`: the agent's sessions (`not_supported` unless it offers
    /// `session/list`).
    AcpSessionList = "acp_session_list" => AcpSessionListParams, AcpSessionList;
    /// `acp_session_resume`: reopens a session without replaying it (`not_supported` unless
    /// the agent offers `session/resume`).
    AcpSessionResume = "acp_session_resume" => AcpSessionLoadParams, AcpSessionSetup;
    /// `acp_session_close`: the agent frees the session; its late updates are dropped.
    AcpSessionClose = "acp_session_close" => AcpSessionParams, ();
    /// `acp_session_delete`: removes the session from the agent's list.
    AcpSessionDelete = "acp_session_delete" => AcpSessionParams, ();
    /// `acp_session_set_config_option`: sets a model, mode or other option.
    AcpSessionSetConfigOption = "acp_session_set_config_option" => AcpSetConfigOptionParams, AcpSessionSetup;
    /// `acp_elicitation_reply`: answers an agent's elicitation.
    AcpElicitationReply = "acp_elicitation_reply" => AcpElicitationReplyParams, ();
}

/// What a WebSocket request asks for: one of the WebSocket methods (platform routing and
/// ACP) or one of the v1 `bb.*` methods with its v1 params, so one page speaks to either
/// transport.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WsRequestCall {
    /// `dialog.open`, `shell.openPath`, `acp_*`.
    Ws(WsCall),
    /// A `bb.*` method of v1.
    Bb(V1Call),
}

/// The method of a WebSocket request: a WebSocket method or a v1 `bb.*` method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WsAnyMethod {
    /// A WebSocket method.
    Ws(WsMethod),
    /// A v1 method.
    Bb(V1Method),
}

impl WsAnyMethod {
    /// The method with this wire name on the WebSocket transport.
    pub fn from_name(name: &str) -> Option<Self> {
        WsMethod::from_name(name)
            .map(WsAnyMethod::Ws)
            .or_else(|| V1Method::from_name(name).map(WsAnyMethod::Bb))
    }
}

impl WsRequestCall {
    /// The method name on the wire.
    pub fn method_name(&self) -> &'static str {
        match self {
            WsRequestCall::Ws(call) => call.method().as_str(),
            WsRequestCall::Bb(call) => call.method().as_str(),
        }
    }
}

impl From<WsCall> for WsRequestCall {
    fn from(call: WsCall) -> Self {
        WsRequestCall::Ws(call)
    }
}

impl From<V1Call> for WsRequestCall {
    fn from(call: V1Call) -> Self {
        WsRequestCall::Bb(call)
    }
}

/// A WebSocket request: `{type: "request", id, method, params}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct WsRequest {
    /// Always `"request"`.
    #[serde(rename = "type")]
    pub kind: RequestTag,
    /// Client-generated id, echoed by the response.
    pub id: String,
    /// Method and params.
    #[serde(flatten)]
    pub call: WsRequestCall,
}

/// The error of a failed WebSocket response: `{message, code?, data?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WsError {
    /// Human-readable message.
    pub message: String,
    /// Stable machine-readable code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// A WebSocket response: `{type: "response", id, ok, result?, error?}`. Built through
/// [`WsResponse::success`] / [`WsResponse::failure`], `ok` always agrees with which of
/// `result`/`error` is set; the decoder rejects messages where it does not.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct WsResponse {
    /// Always `"response"`.
    #[serde(rename = "type")]
    pub kind: ResponseTag,
    /// The id of the request answered.
    pub id: String,
    /// Whether the request succeeded.
    pub ok: bool,
    /// The result, when `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error, when not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<WsError>,
}

/// A WebSocket event: `{type: "event", event, payload}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct WsEvent {
    /// Always `"event"`.
    #[serde(rename = "type")]
    pub kind: EventTag,
    /// Name and payload.
    #[serde(flatten)]
    pub event: WsEventKind,
}

/// Any WebSocket message.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WsMessage {
    /// `type: "request"`.
    Request(WsRequest),
    /// `type: "response"`.
    Response(WsResponse),
    /// `type: "event"`.
    Event(WsEvent),
}

impl WsRequest {
    /// A request with this id.
    pub fn new(id: impl Into<String>, call: impl Into<WsRequestCall>) -> Self {
        WsRequest { kind: RequestTag, id: id.into(), call: call.into() }
    }
}

impl WsError {
    /// An error with a code and no data.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        WsError { message: message.into(), code: Some(code.into()), data: None }
    }
}

impl From<&Rejection> for WsError {
    fn from(rejection: &Rejection) -> Self {
        WsError::new(rejection.code.as_str(), rejection.detail.clone())
    }
}

impl WsResponse {
    /// A successful response carrying `result` (`Value::Null` for methods returning nothing).
    pub fn success(id: impl Into<String>, result: Value) -> Self {
        WsResponse { kind: ResponseTag, id: id.into(), ok: true, result: Some(result), error: None }
    }

    /// A successful response carrying a typed result.
    pub fn success_with<T: Serialize>(
        id: impl Into<String>,
        result: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(WsResponse::success(id, serde_json::to_value(result)?))
    }

    /// A failed response.
    pub fn failure(id: impl Into<String>, error: WsError) -> Self {
        WsResponse { kind: ResponseTag, id: id.into(), ok: false, result: None, error: Some(error) }
    }
}

impl WsEvent {
    /// An event.
    pub fn new(event: WsEventKind) -> Self {
        WsEvent { kind: EventTag, event }
    }
}

impl Rejection {
    /// The error response owed to the sender, when the rejected message was a request whose
    /// id could be read.
    pub fn ws_response(&self) -> Option<WsResponse> {
        let id = self.id.as_deref()?;
        Some(WsResponse::failure(id, WsError::from(self)))
    }
}
