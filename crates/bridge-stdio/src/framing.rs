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

/// The running bridge tasks.
#[derive(Debug)]
pub struct Bridge {
    /// Ends at end of input or shutdown.
    pub reader: JoinHandle<()>,
    /// Ends when every sender of outbound envelopes is gone, after flushing.
    pub writer: JoinHandle<()>,
}

/// The bridge over the process's stdin and stdout; `shutdown` resolving closes the inbound
/// side like end of input does (wire it to SIGTERM).
pub fn stdio(
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (WebviewSink, Bridge) {
    spawn_io(tokio::io::stdin(), tokio::io::stdout(), limits, shutdown)
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
    while let Some(message) = from_service.recv().await {
        let Some(line) = encode(message, &limits) else {
            ack.wrote();
            continue;
        };
        let written = async {
            writer.write_all(line.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await
        };
        if let Err(err) = written.await {
            tracing::warn!(%err, "writing to the webview failed; stopping output");
            break;
        }
        ack.wrote();
    }
}

/// The line written for one outbound envelope (without its `\n`): the envelope, validated;
/// an invalid response becomes an `internal_error` response, an invalid event is logged and
/// dropped (`None`).
pub fn encode(message: V1Message, limits: &Limits) -> Option<String> {
    match message.to_line(limits) {
        Ok(line) => Some(line),
        Err(rejection) => {
            tracing::error!(code = %rejection.code, detail = %rejection.detail, "outbound message failed validation; not sent");
            let V1Message::Response(response) = message else { return None };
            let error = V1Error::new("internal_error", "the bridge produced an invalid response");
            V1Message::Response(V1Response::failure(response.id, error)).to_line(limits).ok()
        }
    }
}
