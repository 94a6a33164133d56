//! The engine transport port: requests and raw byte streams to an engine. Its HTTP adapter
//! lives in `http`, the connection each of its `http://` streams is read on in `own_conn`.

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::Stream;

mod http;
pub(crate) mod own_conn;

pub use http::{DEFAULT_MAX_BODY, EngineAuth, HttpOptions, HttpTransport};

/// HTTP method of an [`EngineRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpMethod {
    /// `GET`
    Get,
    /// `POST`
    Post,
    /// `PUT`
    Put,
    /// `PATCH`
    Patch,
    /// `DELETE`
    Delete,
    /// `REPORT` (a cacheable `POST`; some SSE servers take stream parameters in its body)
    Report,
}

/// One request to the engine, relative to the transport's base URL.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineRequest {
    /// The method.
    pub method: HttpMethod,
    /// The path, starting with `/`.
    pub path: String,
    /// Query parameters, in order.
    pub query: Vec<(String, String)>,
    /// Extra headers (never auth: the transport adds that).
    pub headers: Vec<(String, String)>,
    /// A JSON body.
    pub body: Option<serde_json::Value>,
    /// A `multipart/form-data` body (replaces `body` when set).
    pub form: Option<Form>,
    /// A raw body sent as-is, typed by a `content-type` header or `text/plain` (replaces
    /// `body` when set).
    pub raw_body: Option<Bytes>,
}

/// A `multipart/form-data` body: text fields and files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Form {
    /// Text fields (name, value), in order.
    pub fields: Vec<(String, String)>,
    /// File fields (name, file), in order.
    pub files: Vec<(String, FormFile)>,
}

/// One file of a [`Form`].
#[derive(Debug, Clone, PartialEq)]
pub struct FormFile {
    /// File name sent to the engine.
    pub filename: String,
    /// MIME type.
    pub mime: String,
    /// Contents.
    pub bytes: Bytes,
}

impl EngineRequest {
    /// A request with no query, headers or body.
    pub fn new(method: HttpMethod, path: impl Into<String>) -> Self {
        Self {
            method,
            path: path.into(),
            query: Vec::new(),
            headers: Vec::new(),
            body: None,
            form: None,
            raw_body: None,
        }
    }

    /// `GET path`.
    pub fn get(path: impl Into<String>) -> Self {
        Self::new(HttpMethod::Get, path)
    }

    /// `POST path` with a JSON body.
    pub fn post(path: impl Into<String>, body: serde_json::Value) -> Self {
        Self::new(HttpMethod::Post, path).with_body(body)
    }

    /// `DELETE path`.
    pub fn delete(path: impl Into<String>) -> Self {
        Self::new(HttpMethod::Delete, path)
    }

    /// Adds a query parameter.
    #[must_use]
    pub fn with_query(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.query.push((key.into(), value.into()));
        self
    }

    /// Adds a header.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the JSON body.
    #[must_use]
    pub fn with_body(mut self, body: serde_json::Value) -> Self {
        self.body = Some(body);
        self
    }

    /// Sets a raw body (typed by a `content-type` header, else `text/plain`).
    #[must_use]
    pub fn with_raw_body(mut self, body: impl Into<Bytes>) -> Self {
        self.raw_body = Some(body.into());
        self
    }

    /// Sets a `multipart/form-data` body.
    #[must_use]
    pub fn with_form(mut self, form: Form) -> Self {
        self.form = Some(form);
        self
    }
}

/// A successful (2xx) answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineResponse {
    /// The status code.
    pub status: u16,
    /// Response headers (names lower-case).
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Bytes,
}

/// An SSE body as byte chunks; an `Err` item means the connection broke.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, TransportError>> + Send>>;

/// Why a request or stream failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The engine refused the credentials (401 or 403). Retrying will not help.
    #[error("engine refused the credentials (HTTP {status})")]
    Auth {
        /// 401 or 403.
        status: u16,
    },
    /// A non-2xx answer other than an auth failure.
    #[error("engine answered HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The start of the body (lossy UTF-8, capped).
        body: String,
    },
    /// The connection could not be made or broke.
    #[error("cannot reach the engine: {0}")]
    Connect(String),
    /// The request took longer than its deadline (named, so the message says which bound
    /// ran out).
    #[error("the engine did not answer within {after:?}")]
    Timeout {
        /// The deadline that ran out.
        after: Duration,
    },
    /// A response body was longer than the transport reads.
    #[error("the engine's answer is larger than {limit} bytes")]
    TooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// Reading a response body failed.
    #[error("reading the engine's response failed: {0}")]
    Body(String),
    /// A stream was answered with something other than `text/event-stream`.
    #[error("engine stream has content type {content_type:?}, not text/event-stream")]
    NotEventStream {
        /// The content type received.
        content_type: String,
    },
    /// The transport or request is misconfigured (bad URL, non-loopback host, bad header).
    #[error("invalid engine request: {0}")]
    Invalid(String),
}

impl TransportError {
    /// Whether retrying the same request later may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Connect(_) | Self::Timeout { .. } | Self::Body(_) => true,
            Self::Http { status, .. } => *status >= 500 || *status == 429 || *status == 408,
            Self::Auth { .. }
            | Self::TooLarge { .. }
            | Self::NotEventStream { .. }
            | Self::Invalid(_) => false,
        }
    }
}

/// Whether an engine id can stand as one path segment unchanged: 1 to 128 ASCII letters,
/// digits, `_` or `-` (Kilo's `ses_…`/`per_…`, BreadBoard's UUIDs). Anything else could
/// change the request path or add a query, so the clients refuse it before building one.
pub fn is_path_segment(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The engine transport port: moves requests and bytes, never parsed domain events.
#[async_trait]
pub trait EngineTransport: Send + Sync + fmt::Debug {
    /// Sends one request and reads the whole answer. Non-2xx answers are errors.
    async fn request(&self, request: EngineRequest) -> Result<EngineResponse, TransportError>;
    /// Opens a `text/event-stream` and returns its body as byte chunks.
    async fn open_stream(&self, request: EngineRequest) -> Result<ByteStream, TransportError>;
}
