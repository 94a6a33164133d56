//! The engine transport port: requests and raw byte streams to an engine, and its HTTP
//! adapter (the one place an engine secret is exposed, to build an auth header).

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use secrecy::{ExposeSecret as _, SecretString};

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
    /// The request took longer than its timeout.
    #[error("engine request timed out")]
    Timeout,
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
            Self::Connect(_) | Self::Timeout | Self::Body(_) => true,
            Self::Http { status, .. } => *status >= 500 || *status == 429 || *status == 408,
            Self::Auth { .. } | Self::NotEventStream { .. } | Self::Invalid(_) => false,
        }
    }
}

/// The engine transport port: moves requests and bytes, never parsed domain events.
#[async_trait]
pub trait EngineTransport: Send + Sync + fmt::Debug {
    /// Sends one request and reads the whole answer. Non-2xx answers are errors.
    async fn request(&self, request: EngineRequest) -> Result<EngineResponse, TransportError>;
    /// Opens a `text/event-stream` and returns its body as byte chunks.
    async fn open_stream(&self, request: EngineRequest) -> Result<ByteStream, TransportError>;
}

/// How the transport authenticates to the engine.
#[derive(Debug, Clone, Default)]
pub enum EngineAuth {
    /// No credentials (an unsecured engine).
    #[default]
    None,
    /// HTTP Basic (Kilo: user `kilo`, password from `KILO_SERVER_PASSWORD`).
    Basic {
        /// The user name.
        user: String,
        /// The password.
        password: SecretString,
    },
    /// `Authorization: Bearer` (BreadBoard).
    Bearer(SecretString),
}

/// Timeouts of [`HttpTransport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpOptions {
    /// Bound on establishing a connection.
    pub connect_timeout: Duration,
    /// Bound on a whole [`EngineTransport::request`] (streams have none: the SSE client
    /// watches them with a read timeout).
    pub request_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self { connect_timeout: Duration::from_secs(5), request_timeout: Duration::from_secs(30) }
    }
}

/// Largest body prefix kept in [`TransportError::Http`].
const ERROR_BODY_CAP: usize = 4096;

/// [`EngineTransport`] over HTTP to an engine on a loopback address.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: reqwest::Client,
    base: reqwest::Url,
    auth: EngineAuth,
    options: HttpOptions,
}

impl HttpTransport {
    /// A transport to `base_url`, which must be `http(s)://` on a loopback host.
    pub fn new(
        base_url: &str,
        auth: EngineAuth,
        options: HttpOptions,
    ) -> Result<Self, TransportError> {
        let base = reqwest::Url::parse(base_url)
            .map_err(|e| TransportError::Invalid(format!("engine URL {base_url:?}: {e}")))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(TransportError::Invalid(format!("engine URL {base_url:?}: not http(s)")));
        }
        if !is_loopback(&base) {
            return Err(TransportError::Invalid(format!(
                "engine URL {base_url:?}: host is not a loopback address"
            )));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .no_proxy()
            .build()
            .map_err(|e| TransportError::Invalid(format!("HTTP client: {e}")))?;
        Ok(Self { client, base, auth, options })
    }

    /// The engine's base URL.
    pub fn base_url(&self) -> &str {
        self.base.as_str()
    }

    fn build(&self, request: EngineRequest) -> Result<reqwest::RequestBuilder, TransportError> {
        let mut url = self
            .base
            .join(request.path.trim_start_matches('/'))
            .map_err(|e| TransportError::Invalid(format!("path {:?}: {e}", request.path)))?;
        if !request.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&request.query);
        }
        let method = match request.method {
            HttpMethod::Get => reqwest::Method::GET,
            HttpMethod::Post => reqwest::Method::POST,
            HttpMethod::Put => reqwest::Method::PUT,
            HttpMethod::Patch => reqwest::Method::PATCH,
            HttpMethod::Delete => reqwest::Method::DELETE,
            HttpMethod::Report => reqwest::Method::from_bytes(b"REPORT")
                .map_err(|e| TransportError::Invalid(format!("method: {e}")))?,
        };
        let mut builder = self.client.request(method, url);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        if let Some(form) = request.form {
            builder = builder.multipart(multipart(form)?);
        } else if let Some(raw) = request.raw_body {
            let typed = request.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
            if !typed {
                builder = builder.header(reqwest::header::CONTENT_TYPE, "text/plain");
            }
            builder = builder.body(raw);
        } else if let Some(body) = &request.body {
            builder = builder.json(body);
        }
        // The only place the secret leaves its wrapper: straight into the header value.
        builder = match &self.auth {
            EngineAuth::None => builder,
            EngineAuth::Basic { user, password } => {
                builder.basic_auth(user, Some(password.expose_secret()))
            }
            EngineAuth::Bearer(token) => builder.bearer_auth(token.expose_secret()),
        };
        Ok(builder)
    }
}

fn multipart(form: Form) -> Result<reqwest::multipart::Form, TransportError> {
    let mut out = reqwest::multipart::Form::new();
    for (name, value) in form.fields {
        out = out.text(name, value);
    }
    for (name, file) in form.files {
        let part = reqwest::multipart::Part::stream(file.bytes)
            .file_name(file.filename)
            .mime_str(&file.mime)
            .map_err(|e| TransportError::Invalid(format!("MIME type: {e}")))?;
        out = out.part(name, part);
    }
    Ok(out)
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.eq_ignore_ascii_case("localhost"),
    }
}

fn send_error(err: &reqwest::Error) -> TransportError {
    if err.is_timeout() {
        TransportError::Timeout
    } else if err.is_builder() {
        TransportError::Invalid(error_chain(err))
    } else {
        TransportError::Connect(error_chain(err))
    }
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn headers_of(response: &reqwest::Response) -> Vec<(String, String)> {
    response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect()
}

/// Turns a non-2xx answer into its error, reading a capped prefix of the body.
async fn check_status(response: reqwest::Response) -> Result<reqwest::Response, TransportError> {
    let status = response.status().as_u16();
    if response.status().is_success() {
        return Ok(response);
    }
    if status == 401 || status == 403 {
        return Err(TransportError::Auth { status });
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= ERROR_BODY_CAP {
            body.truncate(ERROR_BODY_CAP);
            break;
        }
    }
    Err(TransportError::Http { status, body: String::from_utf8_lossy(&body).into_owned() })
}

#[async_trait]
impl EngineTransport for HttpTransport {
    async fn request(&self, request: EngineRequest) -> Result<EngineResponse, TransportError> {
        let response = self
            .build(request)?
            .timeout(self.options.request_timeout)
            .send()
            .await
            .map_err(|e| send_error(&e))?;
        let response = check_status(response).await?;
        let status = response.status().as_u16();
        let headers = headers_of(&response);
        let body = response.bytes().await.map_err(|e| {
            if e.is_timeout() {
                TransportError::Timeout
            } else {
                TransportError::Body(error_chain(&e))
            }
        })?;
        Ok(EngineResponse { status, headers, body })
    }

    async fn open_stream(&self, request: EngineRequest) -> Result<ByteStream, TransportError> {
        let response = self
            .build(request.with_header("accept", "text/event-stream"))?
            .send()
            .await
            .map_err(|e| send_error(&e))?;
        let response = check_status(response).await?;
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        if !content_type.to_ascii_lowercase().starts_with("text/event-stream") {
            return Err(TransportError::NotEventStream { content_type });
        }
        Ok(Box::pin(
            response
                .bytes_stream()
                .map(|item| item.map_err(|e| TransportError::Body(error_chain(&e)))),
        ))
    }
}
