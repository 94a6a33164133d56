//! One engine stream on its own HTTP/1.1 connection (hyper's `client::conn::http1` over a
//! plain loopback `TcpStream`), the connection driven by the stream's own polls: a socket
//! read and the body frame it yields happen in one poll of the task reading the stream, with
//! no connection task, no hop between tasks and no client layers.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures_util::task::AtomicWaker;
use futures_util::{Stream, StreamExt as _};
use hyper::body::{Body as _, Incoming};
use hyper::client::conn::http1::{self, Connection, SendRequest};
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderValue};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::http::{ERROR_BODY_CAP, error_chain};
use super::{ByteStream, TransportError};

type Conn = Connection<TokioIo<TcpStream>, reqwest::Body>;

/// Opens `request` (an `http://` URL on a loopback host, auth and other headers already set)
/// on a new connection and returns its `text/event-stream` body.
pub(super) async fn open_stream(
    request: reqwest::Request,
    connect_timeout: Duration,
) -> Result<ByteStream, TransportError> {
    let url = request.url().clone();
    let mut request = hyper::Request::<reqwest::Body>::try_from(request)
        .map_err(|e| TransportError::Invalid(error_chain(&e)))?;
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or(80);
    // What reqwest's client adds: its default `Accept`, the `Host` header (with the port
    // unless it is the scheme's default) and the origin-form request target.
    let headers = request.headers_mut();
    headers.entry(ACCEPT).or_insert(HeaderValue::from_static("*/*"));
    if !headers.contains_key(HOST) {
        let value = match url.port() {
            Some(port) => HeaderValue::try_from(format!("{host}:{port}")),
            None => HeaderValue::try_from(host),
        };
        headers.insert(HOST, value.map_err(|e| TransportError::Invalid(format!("host: {e}")))?);
    }
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    *request.uri_mut() =
        target.parse().map_err(|e| TransportError::Invalid(format!("path {target:?}: {e}")))?;

    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let tcp = tokio::time::timeout(connect_timeout, TcpStream::connect((bare, port)))
        .await
        .map_err(|_| TransportError::Timeout { after: connect_timeout })?
        .map_err(|e| TransportError::Connect(format!("{host}:{port}: tcp connect error: {e}")))?;
    tcp.set_nodelay(true).map_err(|e| TransportError::Connect(format!("TCP_NODELAY: {e}")))?;
    let (mut sender, conn) = http1::handshake::<_, reqwest::Body>(TokioIo::new(tcp))
        .await
        .map_err(|e| TransportError::Connect(error_chain(&e)))?;
    let mut conn = Box::pin(conn);
    let mut answer = std::pin::pin!(sender.send_request(request));
    let mut conn_ended = false;
    let response = poll_fn(|cx| {
        if !conn_ended && conn.as_mut().poll(cx).is_ready() {
            conn_ended = true;
        }
        match answer.as_mut().poll(cx) {
            Poll::Ready(result) => {
                Poll::Ready(result.map_err(|e| TransportError::Connect(error_chain(&e))))
            }
            Poll::Pending if conn_ended => Poll::Ready(Err(TransportError::Connect(
                "the connection closed before the engine answered".into(),
            ))),
            Poll::Pending => Poll::Pending,
        }
    })
    .await?;

    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let body = OwnConnection::new(
        if conn_ended { None } else { Some(conn) },
        response.into_body(),
        sender,
    );
    if !response_ok(status) {
        if status == 401 || status == 403 {
            return Err(TransportError::Auth { status });
        }
        return Err(TransportError::Http { status, body: capped_body(body).await });
    }
    if !content_type.to_ascii_lowercase().starts_with("text/event-stream") {
        return Err(TransportError::NotEventStream { content_type });
    }
    Ok(Box::pin(body))
}

fn response_ok(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The first [`ERROR_BODY_CAP`] bytes of an error answer's body (lossy UTF-8).
async fn capped_body(mut body: OwnConnection) -> String {
    let mut text = Vec::new();
    while let Some(Ok(chunk)) = body.next().await {
        text.extend_from_slice(&chunk);
        if text.len() >= ERROR_BODY_CAP {
            text.truncate(ERROR_BODY_CAP);
            break;
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// Rounds of one `poll_next` before it yields to the runtime (hyper's dispatcher yields after
/// 16 of its own; this bounds how long one busy stream holds its task).
const ROUNDS: usize = 16;

/// The body of a stream and the connection that feeds it, both polled by the stream's task.
struct OwnConnection {
    /// `None` once the connection future has ended (the body then yields what it was given).
    conn: Option<Pin<Box<Conn>>>,
    body: Incoming,
    /// Kept so the connection is not closed for lack of a request handle before the body ends.
    _sender: SendRequest<reqwest::Body>,
    notes: Arc<Notes>,
    /// The waker the connection and body are polled with (`notes` as a `Waker`).
    waker: Waker,
    ended: bool,
}

impl OwnConnection {
    fn new(
        conn: Option<Pin<Box<Conn>>>,
        body: Incoming,
        sender: SendRequest<reqwest::Body>,
    ) -> Self {
        let notes = Arc::new(Notes { state: AtomicU8::new(IDLE), task: AtomicWaker::new() });
        let waker = Waker::from(Arc::clone(&notes));
        Self { conn, body, _sender: sender, notes, waker, ended: false }
    }

    /// One round: the body's next frame, else the connection driven once.
    fn step(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, TransportError>>> {
        loop {
            match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) if !data.is_empty() => return Poll::Ready(Some(Ok(data))),
                    // Empty data and trailers carry nothing for the stream.
                    _ => continue,
                },
                Poll::Ready(Some(Err(e))) => {
                    self.ended = true;
                    return Poll::Ready(Some(Err(TransportError::Body(error_chain(&e)))));
                }
                Poll::Ready(None) => {
                    self.ended = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => {}
            }
            let Some(conn) = self.conn.as_mut() else {
                self.ended = true;
                return Poll::Ready(Some(Err(TransportError::Body(
                    "the connection closed before the body ended".into(),
                ))));
            };
            match conn.as_mut().poll(cx) {
                // What the connection read is in the body now (a frame, an error or its end).
                Poll::Ready(_) => self.conn = None,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Stream for OwnConnection {
    type Item = Result<Bytes, TransportError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        this.notes.task.register(cx.waker());
        let waker = this.waker.clone();
        let mut local = Context::from_waker(&waker);
        for _ in 0..ROUNDS {
            this.notes.state.store(POLLING, Ordering::Release);
            if let Poll::Ready(item) = this.step(&mut local) {
                // A wake noted during this poll needs no new poll: the caller polls again
                // after an item.
                this.notes.state.store(IDLE, Ordering::Release);
                return Poll::Ready(item);
            }
            if this
                .notes
                .state
                .compare_exchange(POLLING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Poll::Pending;
            }
            // Woken during the round (the connection filled the body, the body asked for
            // more, or the socket became ready): go round again instead of being scheduled.
        }
        this.notes.state.store(IDLE, Ordering::Release);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

const IDLE: u8 = 0;
const POLLING: u8 = 1;
const NOTIFIED: u8 = 2;

/// Wakes of the connection and body: noted while the stream is being polled (its poll goes
/// round again), passed to the stream's task otherwise. The body and the connection wake each
/// other at every frame; without this each such wake would schedule the task once more.
#[derive(Debug)]
struct Notes {
    state: AtomicU8,
    task: AtomicWaker,
}

impl Wake for Notes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self.state.compare_exchange(POLLING, NOTIFIED, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) | Err(NOTIFIED) => {}
            Err(_) => self.task.wake(),
        }
    }
}
