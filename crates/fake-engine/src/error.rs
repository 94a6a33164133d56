//! The engine's error envelope `{"error", "detail", "path"}` as an axum response.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A handled error, answered with the engine's envelope.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) code: &'static str,
    pub(crate) detail: Value,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, detail: impl Into<Value>) -> Self {
        Self { status, code, detail: detail.into() }
    }

    pub(crate) fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", "unauthorized")
    }

    pub(crate) fn not_found(detail: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", detail)
    }

    pub(crate) fn session_not_found() -> Self {
        Self::not_found("session not found")
    }

    pub(crate) fn bad_request(detail: impl Into<Value>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", detail)
    }

    pub(crate) fn closed() -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", "session is closed")
    }

    pub(crate) fn window_exceeded() -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "resume_window_exceeded",
            "resume window exceeded or event id not found",
        )
    }

    /// A pydantic-style 422 for a missing body field.
    pub(crate) fn missing_field(field: &str, input: &Value) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            json!({"errors": [{"type": "missing", "loc": ["body", field], "msg": "Field required", "input": input}]}),
        )
    }

    /// A pydantic-style 422 for a body field that is not a string.
    pub(crate) fn not_a_string(field: &str, input: &Value) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            json!({"errors": [{"type": "string_type", "loc": ["body", field], "msg": "Input should be a valid string", "input": input}]}),
        )
    }

    /// The engine's 409 for the files routes of a session created without a workspace.
    pub(crate) fn workspace_not_ready() -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", "workspace not ready")
    }

    /// A FastAPI 422 for a missing query parameter.
    pub(crate) fn missing_query(field: &str) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            json!({"errors": [{"type": "missing", "loc": ["query", field], "msg": "Field required", "input": null}]}),
        )
    }

    /// A 422 for a body that is not the expected JSON.
    pub(crate) fn invalid_body(message: &str) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            json!({"errors": [{"type": "json_invalid", "loc": ["body"], "msg": message}]}),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": self.code, "detail": self.detail, "path": null});
        (self.status, [(header::CONTENT_TYPE, "application/json")], body.to_string())
            .into_response()
    }
}

/// The engine's quirk for a blank `content` or `command`: its 422 handler crashes.
pub(crate) fn quirk_internal_error() -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Internal Server Error",
    )
        .into_response()
}
