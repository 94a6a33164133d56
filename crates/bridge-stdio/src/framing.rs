//! Reader and writer tasks over any byte streams.

use std::future::Future;

use bb_protocol::v1::{V1Error, V1Response};
use bb_protocol::{Limits, Rejection, V1Message, decode_v1};
use bb_service::{Inbound, WebviewSink, WriteAck};
use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::answer::{self, Refused};
use crate::line::{Line, read_line};
#[cfg(unix)]
use crate::process_io;

/// The writer writes what is queued when it wakes in one go, up to about this many bytes.
const WRITE_BATCH: usize = 256 * 1024;
/// Its buffer keeps at most this much capacity between writes (an idle bridge holds little).
const KEEP_BUFFER: usize = 64 * 1024;

/// The running bridge tasks.
#[derive(Debug)]
pub struct Bridge {
    /// Ends at end of input or shutdown.
    pub reader: JoinHandle<()>,
    /// Ends when every sender of outbound envelopes is gone, after flushing.
    pub writer: JoinHandle<()>,
}

/// The bridge over the process's stdin and stdout (pipes and sockets driven by the runtime,
/// see `process_io.rs`); `shutdown` resolving closes the inbound side like end of input does
/// (wire it to SIGTERM). Must be called inside the runtime.
pub fn stdio(
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (WebviewSink, Bridge) {
    #[cfg(unix)]
    return spawn_io(process_io::input(), process_io::output(), limits, shutdown);
    #[cfg(not(unix))]
    return spawn_io(tokio::io::stdin(), tokio::io::stdout(), limits, shutdown);
}

/// The bridge over any reader and writer.
pub fn spawn_io<R, W>(
    reader: R,
    writer: W,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (WebviewSink, Bridge)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (sink, to_service, from_service, ack) = bb_service::sink::channels_with_ack();
    let reader = tokio::spawn(read_loop(BufReader::new(reader), to_service, limits, shutdown));
    let writer = tokio::spawn(write_loop(writer, from_service, limits, ack));
    (sink, Bridge { reader, writer })
}

async fn read_loop<R: AsyncBufRead + Unpin>(
    mut reader: R,
    to_service: mpsc::Sender<Inbound>,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let cap = limits.max_bytes.saturating_add(1);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        let read = tokio::select! {
            read = read_line(&mut reader, &mut buf, cap) => read,
            () = &mut shutdown => {
                tracing::info!("shutdown requested; closing the webview input");
                break;
            }
        };
        let line = match read {
            Ok(Line::End) => {
                tracing::info!("webview input closed");
                break;
            }
            Ok(line) => line,
            Err(err) => {
                tracing::warn!(%err, "reading webview input failed");
                break;
            }
        };
        line_no += 1;
        let (rejection, refused) = match line {
            Line::TooLong { len, id } => {
                (Rejection::too_large(len, limits.max_bytes).answering(id), Refused::TooLong(len))
            }
            Line::Complete | Line::End => match decode_v1(&buf, &limits) {
                Ok(V1Message::Request(request)) => {
                    if to_service.send(Inbound::Request(request)).await.is_err() {
                        break;
                    }
                    continue;
                }
                Ok(other) => {
                    let kind = if matches!(other, V1Message::Response(_)) { "res" } else { "evt" };
                    tracing::warn!(
                        line = line_no,
                        kind,
                        "protocol violation: the webview may only send requests"
                    );
                    continue;
                }
                Err(rejection) => (answer::with_sniffed_id(rejection, &buf), Refused::Held(&buf)),
            },
        };
        let answered = rejection.id.is_some();
        tracing::warn!(line = line_no, code = %rejection.code, answered, "protocol violation");
        // The answer takes its turn in the service, after the responses to earlier requests.
        if let Some(response) = answer::response(&rejection, refused, &limits)
            && to_service.send(Inbound::Rejected(Box::new(response))).await.is_err()
        {
            break;
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut from_service: mpsc::Receiver<V1Message>,
    limits: Limits,
    ack: WriteAck,
) {
    let mut buf = Vec::new();
    while let Some(message) = from_service.recv().await {
        // Everything queued by now leaves in one write: one wake-up and one system call for
        // a burst of envelopes (a flush of many sessions, a response and its events).
        let mut envelopes = 1usize;
        push_line(&mut buf, message, &limits);
        while buf.len() < WRITE_BATCH {
            let Ok(message) = from_service.try_recv() else { break };
            envelopes += 1;
            push_line(&mut buf, message, &limits);
        }
        let written = async {
            writer.write_all(&buf).await?;
            writer.flush().await
        };
        if let Err(err) = written.await {
            tracing::warn!(%err, "writing to the webview failed; stopping output");
            break;
        }
        for _ in 0..envelopes {
            ack.wrote();
        }
        buf.clear();
        if buf.capacity() > KEEP_BUFFER {
            buf = Vec::new();
        }
    }
}

/// Appends the line of one envelope and its `\n` (nothing when it is dropped).
fn push_line(buf: &mut Vec<u8>, message: V1Message, limits: &Limits) {
    if encode_into(buf, message, limits) {
        buf.push(b'\n');
    }
}

/// The line written for one outbound envelope (without its `\n`): the envelope, validated;
/// an invalid response becomes an `internal_error` response, an invalid event is logged and
/// dropped (`None`).
pub fn encode(message: V1Message, limits: &Limits) -> Option<String> {
    let mut line = Vec::new();
    encode_into(&mut line, message, limits).then(|| String::from_utf8(line).ok()).flatten()
}

/// [`encode`], the line appended to `buf` (a writer's buffer; without its `\n`) instead of
/// made a `String` of its own: `false` when it is dropped, `buf` then as it was.
pub fn encode_into(buf: &mut Vec<u8>, message: V1Message, limits: &Limits) -> bool {
    match message.write_line(buf, limits) {
        Ok(()) => true,
        Err(rejection) => {
            tracing::error!(code = %rejection.code, detail = %rejection.detail, "outbound message failed validation; not sent");
            let V1Message::Response(response) = message else { return false };
            let error = V1Error::new("internal_error", "the bridge produced an invalid response");
            V1Message::Response(V1Response::failure(response.id, error))
                .write_line(buf, limits)
                .is_ok()
        }
    }
}
