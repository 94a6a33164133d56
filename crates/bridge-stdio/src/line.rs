//! Reading one JSON Lines line with a byte cap: a line up to the cap is kept whole; the rest of
//! a longer one is consumed as it arrives, counted and fed to an [`IdSniffer`], never held.

use bb_protocol::IdSniffer;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One line read from the webview.
#[derive(Debug)]
pub(crate) enum Line {
    /// A line within the cap, in the caller's buffer (terminator and a trailing `\r` dropped).
    Complete,
    /// A line longer than the cap: its full length and the request id read from it, if any.
    TooLong {
        /// Bytes in the line, terminator excluded.
        len: u64,
        /// The request id, when the line reads as a request with a readable id.
        id: Option<String>,
    },
    /// End of input with nothing read.
    End,
}

/// Reads one line into `buf`, keeping at most `cap` bytes (the byte limit + 1, room for a
/// `\r` before the `\n`; the decoder still refuses a kept line over the limit).
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut any = false;
    let mut overflow: Option<(u64, IdSniffer)> = None;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(finish(any, buf, overflow));
        }
        any = true;
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.unwrap_or(available.len());
        let chunk = &available[..take];
        match &mut overflow {
            Some((len, sniffer)) => {
                sniffer.push(chunk);
                *len += chunk.len() as u64;
            }
            None if buf.len() + chunk.len() <= cap => buf.extend_from_slice(chunk),
            None => {
                let mut sniffer = IdSniffer::new();
                sniffer.push(buf);
                sniffer.push(chunk);
                overflow = Some(((buf.len() + chunk.len()) as u64, sniffer));
                buf.clear();
            }
        }
        let consumed = newline.map_or(available.len(), |p| p + 1);
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(finish(true, buf, overflow));
        }
    }
}

fn finish(any: bool, buf: &mut Vec<u8>, overflow: Option<(u64, IdSniffer)>) -> Line {
    match overflow {
        Some((len, sniffer)) => Line::TooLong { len, id: sniffer.request_id() },
        None if !any => Line::End,
        None => {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            Line::Complete
        }
    }
}
