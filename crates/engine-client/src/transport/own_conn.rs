//! One engine stream on an HTTP/1.1 connection of its own, read in the stream's own task.
//!
//! The request reqwest built (auth header, query, body) is written out as HTTP/1.1 text, the
//! answer's head is parsed by `httparse`, and the body's framing (chunked, a length, or up to
//! the close) is decoded here ([`Framing`]). A socket read and the event-stream bytes it
//! carries are one poll of the task that reads the stream: no connection task, no channel
//! between tasks, no client layers, and a chunk's size line is read in one pass, not a byte at
//! a time (BENCHMARKS.md, issue 29, seventeenth round).

use std::fmt::Write as _;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf as _, Bytes, BytesMut};
use futures_util::{Stream, StreamExt as _};
use reqwest::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST, TRANSFER_ENCODING};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_util::io::poll_read_buf;

use super::http::{ERROR_BODY_CAP, error_chain};
use super::{ByteStream, TransportError};

/// Longest answer head read (status line and headers).
const MAX_HEAD: usize = 64 << 10;
/// Most headers an answer head may carry.
const MAX_HEADERS: usize = 64;
/// Longest chunk-size line (with its extensions) or trailer line.
const MAX_LINE: usize = 4 << 10;
/// Room made in the read buffer before a read: one read takes what an event's chunks carry.
const READ_ROOM: usize = 8 << 10;

/// Whether `request` can go on its own connection: its body, if any, is in memory.
pub(super) fn fits(request: &reqwest::Request) -> bool {
    request.body().is_none_or(|body| body.as_bytes().is_some())
}

/// Opens `request` (an `http://` URL on a loopback host, auth and other headers set, a body
/// [`fits`]) on a new connection and returns its `text/event-stream` body.
pub(super) async fn open_stream(
    request: reqwest::Request,
    connect_timeout: Duration,
) -> Result<ByteStream, TransportError> {
    let url = request.url();
    let host = url.host_str().unwrap_or_default().to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    let head = request_head(&request);

    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let mut tcp = tokio::time::timeout(connect_timeout, TcpStream::connect((bare, port)))
        .await
        .map_err(|_| TransportError::Timeout { after: connect_timeout })?
        .map_err(|e| TransportError::Connect(format!("{host}:{port}: tcp connect error: {e}")))?;
    tcp.set_nodelay(true).map_err(|e| TransportError::Connect(format!("TCP_NODELAY: {e}")))?;
    tcp.write_all(&head)
        .await
        .map_err(|e| TransportError::Connect(format!("writing the request: {e}")))?;
    drop(head);

    let mut buf = BytesMut::with_capacity(READ_ROOM);
    let answer = loop {
        match parse_head(&buf)? {
            // An interim answer (`100 Continue`, `103 Early Hints`): the real one follows.
            Some(interim) if (100..200).contains(&interim.status) && interim.status != 101 => {
                buf.advance(interim.len);
                continue;
            }
            Some(answer) => break answer,
            None => {}
        }
        if buf.len() >= MAX_HEAD {
            return Err(TransportError::Body(format!(
                "the engine's answer head is longer than {MAX_HEAD} bytes"
            )));
        }
        buf.reserve(READ_ROOM);
        match tcp.read_buf(&mut buf).await {
            Ok(0) => {
                return Err(TransportError::Connect(
                    "the connection closed before the engine answered".into(),
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(TransportError::Connect(format!("reading the answer: {e}"))),
        }
    };
    buf.advance(answer.len);
    let body = OwnConnection {
        tcp,
        buf,
        out: BytesMut::new(),
        framing: answer.framing,
        yield_first: false,
    };
    if !(200..300).contains(&answer.status) {
        if answer.status == 401 || answer.status == 403 {
            return Err(TransportError::Auth { status: answer.status });
        }
        return Err(TransportError::Http { status: answer.status, body: capped_body(body).await });
    }
    if !answer.content_type.to_ascii_lowercase().starts_with("text/event-stream") {
        return Err(TransportError::NotEventStream { content_type: answer.content_type });
    }
    Ok(Box::pin(body))
}

/// The request as HTTP/1.1 text: request line, headers (with what reqwest's client would
/// add: `Host`, its default `Accept`, the body's length) and body. The auth header's secret
/// is in it: it goes to the socket and is dropped.
fn request_head(request: &reqwest::Request) -> Vec<u8> {
    let url = request.url();
    let mut line = format!("{} {}", request.method(), url.path());
    if let Some(query) = url.query() {
        line.push('?');
        line.push_str(query);
    }
    line.push_str(" HTTP/1.1\r\n");
    let headers = request.headers();
    if !headers.contains_key(HOST) {
        let host = url.host_str().unwrap_or_default();
        let _ = match url.port() {
            Some(port) => write!(line, "host: {host}:{port}\r\n"),
            None => write!(line, "host: {host}\r\n"),
        };
    }
    if !headers.contains_key(ACCEPT) {
        line.push_str("accept: */*\r\n");
    }
    let body = request.body().and_then(reqwest::Body::as_bytes).unwrap_or_default();
    if !body.is_empty() && !headers.contains_key(CONTENT_LENGTH) {
        let _ = write!(line, "content-length: {}\r\n", body.len());
    }
    let mut head = line.into_bytes();
    for (name, value) in headers {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head.extend_from_slice(body);
    head
}

/// What the answer's head says.
#[derive(Debug)]
struct Answer {
    /// Bytes of the head, blank line included.
    len: usize,
    status: u16,
    content_type: String,
    framing: Framing,
}

/// The answer's head, once `buf` holds all of it.
fn parse_head(buf: &[u8]) -> Result<Option<Answer>, TransportError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(TransportError::Body(format!("the engine's answer head: {e}"))),
    };
    let status = response.code.unwrap_or_default();
    let mut content_type = String::new();
    let mut chunked = false;
    let mut length = None;
    for header in response.headers.iter() {
        let value = String::from_utf8_lossy(header.value);
        if header.name.eq_ignore_ascii_case(CONTENT_TYPE.as_str()) {
            content_type = value.into_owned();
        } else if header.name.eq_ignore_ascii_case(TRANSFER_ENCODING.as_str()) {
            // The last coding decides the framing (RFC 9112 §6.3).
            chunked =
                value.rsplit(',').next().is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        } else if header.name.eq_ignore_ascii_case(CONTENT_LENGTH.as_str()) {
            let n = value.trim().parse::<u64>().map_err(|_| {
                TransportError::Body(format!("the engine's answer has content-length {value:?}"))
            })?;
            length = Some(n);
        }
    }
    let framing = match (chunked, length) {
        (true, _) => Framing::Chunked(Chunked::Size),
        // An empty body has ended already: nothing is decoded to end it.
        (false, Some(0)) => Framing::Ended,
        (false, Some(n)) => Framing::Length(n),
        (false, None) => Framing::Close,
    };
    Ok(Some(Answer { len, status, content_type, framing }))
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

/// How the body ends, and where its decoding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Transfer-Encoding: chunked`.
    Chunked(Chunked),
    /// `Content-Length`: the bytes still to come.
    Length(u64),
    /// Neither: the body ends when the connection closes.
    Close,
    /// The body ended.
    Ended,
}

/// Where a chunked body's decoding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chunked {
    /// At a chunk-size line.
    Size,
    /// In a chunk's data: the bytes still to come.
    Data(u64),
    /// At the line end after a chunk's data.
    DataEnd,
    /// In the trailer section, after the last chunk.
    Trailers,
}

impl Framing {
    /// Decodes what `buf` holds onto `out` (the body's data), consuming the framing; stops
    /// where `buf` runs out. An error names what broke the framing.
    ///
    /// `buf` is read by position and consumed once, at the end: emptied in place when all of
    /// it was decoded (the usual read: whole chunks), so its room is reused from its start.
    /// Each `BytesMut::advance` costs ~40 instructions, and a BreadBoard event (two chunks)
    /// took six.
    pub(crate) fn decode(&mut self, buf: &mut BytesMut, out: &mut BytesMut) -> Result<(), String> {
        let mut at = 0;
        let decoded = self.decode_from(buf, &mut at, out);
        if at == buf.len() {
            buf.clear();
        } else {
            buf.advance(at);
        }
        decoded
    }

    /// [`Framing::decode`] of `buf` from `at`, which it moves past what it consumed.
    fn decode_from(
        &mut self,
        buf: &[u8],
        at: &mut usize,
        out: &mut BytesMut,
    ) -> Result<(), String> {
        loop {
            let rest = &buf[*at..];
            match self {
                Self::Ended => return Ok(()),
                Self::Close => {
                    out.extend_from_slice(rest);
                    *at = buf.len();
                    return Ok(());
                }
                Self::Length(left) => {
                    let n = take(rest, out, *left);
                    *at += n;
                    *left -= n as u64;
                    if *left == 0 {
                        *self = Self::Ended;
                    }
                    return Ok(());
                }
                Self::Chunked(Chunked::Data(left)) => {
                    let n = take(rest, out, *left);
                    *at += n;
                    *left -= n as u64;
                    if *left > 0 {
                        return Ok(());
                    }
                    *self = Self::Chunked(Chunked::DataEnd);
                }
                Self::Chunked(Chunked::DataEnd) => {
                    // The usual line end is taken without a search.
                    let taken = if rest.starts_with(b"\r\n") {
                        2
                    } else {
                        let Some((len, taken)) = line(rest)? else { return Ok(()) };
                        if len != 0 {
                            return Err("a chunk is longer than its size line says".into());
                        }
                        taken
                    };
                    *at += taken;
                    *self = Self::Chunked(Chunked::Size);
                }
                Self::Chunked(Chunked::Size) => {
                    let (size, taken) = match plain_size_line(rest) {
                        Some(plain) => plain,
                        None => {
                            let Some((len, taken)) = line(rest)? else { return Ok(()) };
                            (chunk_size(&rest[..len])?, taken)
                        }
                    };
                    // A whole chunk and its line end (the usual read): copied at once, and
                    // the decoding stays at the next size line.
                    if let Some(whole) = whole_chunk(rest, taken, size) {
                        out.extend_from_slice(&rest[taken..whole - 2]);
                        *at += whole;
                        continue;
                    }
                    *at += taken;
                    *self = Self::Chunked(if size == 0 {
                        Chunked::Trailers
                    } else {
                        Chunked::Data(size)
                    });
                }
                Self::Chunked(Chunked::Trailers) => {
                    let Some((len, taken)) = line(rest)? else { return Ok(()) };
                    *at += taken;
                    if len == 0 {
                        *self = Self::Ended;
                    }
                }
            }
        }
    }

    /// What the connection's close means here: the body's end, or a body cut short.
    fn at_close(&mut self) -> Result<(), String> {
        match std::mem::replace(self, Self::Ended) {
            Self::Close | Self::Ended => Ok(()),
            _ => Err("the connection closed before the body ended".into()),
        }
    }
}

/// The length of the chunk at the start of `rest`, from its size line (`taken` bytes, the
/// size `size`, not 0) to its data's line end, when all of it is there and its data ends
/// with `\r\n`; `None` else (read state by state).
fn whole_chunk(rest: &[u8], taken: usize, size: u64) -> Option<usize> {
    let end = taken.checked_add(usize::try_from(size).ok().filter(|&n| n > 0)?)?;
    (rest.get(end..end.checked_add(2)?)? == b"\r\n").then_some(end + 2)
}

/// Copies up to `left` bytes of `rest` onto `out`; how many.
fn take(rest: &[u8], out: &mut BytesMut, left: u64) -> usize {
    let n = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
    out.extend_from_slice(&rest[..n]);
    n
}

/// The next line at the start of `buf`: its length without its line end (`\r\n`, or a bare
/// `\n`) and its length with it, which the caller consumes once it has read the line;
/// `None` until a whole line is there. The line is read in place (a line split off a
/// `BytesMut` would make its buffer shared, an allocation per line), and its end is looked
/// for by hand in the first 18 bytes, where a size line or a chunk's line end is.
fn line(buf: &[u8]) -> Result<Option<(usize, usize)>, String> {
    const BY_HAND: usize = 18;
    let head = buf.len().min(BY_HAND);
    let end = match buf[..head].iter().position(|&b| b == b'\n') {
        Some(end) => end,
        None if head == buf.len() => return Ok(None),
        None => match memchr::memchr(b'\n', &buf[head..]) {
            Some(at) => head + at,
            None if buf.len() > MAX_LINE => {
                return Err(format!(
                    "a chunk-size or trailer line is longer than {MAX_LINE} bytes"
                ));
            }
            None => return Ok(None),
        },
    };
    let len = if end > 0 && buf[end - 1] == b'\r' { end - 1 } else { end };
    Ok(Some((len, end + 1)))
}

/// The size line at the start of `buf` when it is hex digits alone (at most 16) and `\r\n`,
/// as engines write it: its size and its length with the line end, read in one pass (where
/// [`line`] and [`chunk_size`] take three). `None` for anything else (extensions, spaces, a
/// bare `\n`, a line not all read yet), which they read.
fn plain_size_line(buf: &[u8]) -> Option<(u64, usize)> {
    let mut size = 0;
    for (at, &byte) in buf.iter().enumerate().take(17) {
        let digit = match byte {
            b'0'..=b'9' => byte - b'0',
            b'a'..=b'f' => byte - b'a' + 10,
            b'A'..=b'F' => byte - b'A' + 10,
            b'\r' if at > 0 && buf.get(at + 1) == Some(&b'\n') => return Some((size, at + 2)),
            _ => return None,
        };
        size = (size << 4) | u64::from(digit);
    }
    None
}

/// A chunk-size line's size: hex digits, then optional extensions (`;…`), which are ignored.
fn chunk_size(line: &[u8]) -> Result<u64, String> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let rest = &line[digits..];
    let rest_ok = rest.iter().all(|b| matches!(b, b' ' | b'\t')) || {
        let trimmed = rest.trim_ascii_start();
        trimmed.first() == Some(&b';')
    };
    if digits == 0 || digits > 16 || !rest_ok {
        return Err(format!("bad chunk-size line {:?}", String::from_utf8_lossy(line)));
    }
    // At most 16 hex digits: the value fits in a `u64`.
    Ok(line[..digits].iter().fold(0, |size, &digit| {
        (size << 4) | u64::from(char::from(digit).to_digit(16).unwrap_or(0))
    }))
}

/// The body of a stream, read from its connection by the stream's own polls.
struct OwnConnection {
    tcp: TcpStream,
    /// Bytes read and not yet decoded.
    buf: BytesMut,
    /// Body data decoded and not yet handed out.
    out: BytesMut,
    framing: Framing,
    /// The last read filled the room it had: yield before the next.
    yield_first: bool,
}

impl Stream for OwnConnection {
    type Item = Result<Bytes, TransportError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            // Nothing read is left after the poll that handed the last read over (the usual
            // case: each read is whole chunks), and an empty buffer decodes to nothing.
            if !this.buf.is_empty()
                && let Err(e) = this.framing.decode(&mut this.buf, &mut this.out)
            {
                this.framing = Framing::Ended;
                return Poll::Ready(Some(Err(TransportError::Body(e))));
            }
            if !this.out.is_empty() {
                return Poll::Ready(Some(Ok(this.out.split().freeze())));
            }
            if this.framing == Framing::Ended {
                return Poll::Ready(None);
            }
            if std::mem::take(&mut this.yield_first) {
                // The last read filled the buffer, so more is likely waiting (a burst, a
                // history): the other tasks (the loop that takes what was read) get their turn
                // first, as they did when a connection task handed each read over.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if this.buf.capacity() - this.buf.len() < READ_ROOM / 2 {
                this.buf.reserve(READ_ROOM);
            }
            let room = this.buf.capacity() - this.buf.len();
            // tokio's read: one that comes back short marks the socket not ready, so the
            // next round waits for the socket instead of trying a read that finds nothing.
            match ready!(poll_read_buf(Pin::new(&mut this.tcp), cx, &mut this.buf)) {
                Ok(0) => {
                    if let Err(e) = this.framing.at_close() {
                        return Poll::Ready(Some(Err(TransportError::Body(e))));
                    }
                }
                Ok(n) => this.yield_first = n == room,
                Err(e) => {
                    this.framing = Framing::Ended;
                    return Poll::Ready(Some(Err(TransportError::Body(error_chain(&e)))));
                }
            }
        }
    }
}
