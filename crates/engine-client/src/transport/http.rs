//! The HTTP adapter of the engine transport port (reqwest, loopback only): the one place an
//! engine secret is exposed, to build an auth header.

use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt as _;
use secrecy::{ExposeSecret as _, SecretString};

use super::own_conn;
use super::{
    ByteStream, EngineRequest, EngineResponse, EngineTransport, Form, HttpMethod, TransportError,
};

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

/// Timeouts and size bound of [`HttpTransport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpOptions {
    /// Bound on establishing a connection.
    pub connect_timeout: Duration,
    /// Bound on a whole [`EngineTransport::request`] (streams have none: the SSE client
    /// watches them with a read timeout).
    pub request_timeout: Duration,
    /// Most bytes read from one response body ([`EngineTransport::request`]); a longer
    /// body is [`TransportError::TooLarge`], never held whole.
    pub max_body: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            max_body: DEFAULT_MAX_BODY,
        }
    }
}

/// Default bound on a response body: 64 MiB (a long session's whole history fits).
pub const DEFAULT_MAX_BODY: usize = 64 << 20;

/// Largest body prefix kept in [`TransportError::Http`].
pub(super) const ERROR_BODY_CAP: usize = 4096;

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

fn send_error(err: &reqwest::Error, deadline: Duration) -> TransportError {
    if err.is_timeout() {
        TransportError::Timeout { after: deadline }
    } else if err.is_builder() {
        TransportError::Invalid(error_chain(err))
    } else {
        TransportError::Connect(error_chain(err))
    }
}

pub(super) fn error_chain(err: &dyn std::error::Error) -> String {
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
            .map_err(|e| send_error(&e, self.options.request_timeout))?;
        let response = check_status(response).await?;
        let status = response.status().as_u16();
        let headers = headers_of(&response);
        let limit = self.options.max_body;
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(TransportError::TooLarge { limit });
        }
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| {
                if e.is_timeout() {
                    TransportError::Timeout { after: self.options.request_timeout }
                } else {
                    TransportError::Body(error_chain(&e))
                }
            })?;
            if body.len() + chunk.len() > limit {
                return Err(TransportError::TooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(EngineResponse { status, headers, body: body.into() })
    }

    async fn open_stream(&self, request: EngineRequest) -> Result<ByteStream, TransportError> {
        let builder = self.build(request.with_header("accept", "text/event-stream"))?;
        let request = builder.build().map_err(|e| TransportError::Invalid(error_chain(&e)))?;
        if self.base.scheme() == "http" && own_conn::fits(&request) {
            // Each stream on its own connection, read in the stream's own task.
            return own_conn::open_stream(request, self.options.connect_timeout).await;
        }
        let response = self
            .client
            .execute(request)
            .await
            .map_err(|e| send_error(&e, self.options.connect_timeout))?;
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
