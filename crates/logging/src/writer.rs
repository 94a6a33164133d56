//! `RedactingMakeWriter`: a `tracing-subscriber` writer factory whose writers collect one
//! formatted event and write it redacted, one line per event.

use std::io::{self, Write};

use bb_normalize::redact::{LOG_LINE_CAP, redact_log_line};
use tracing_subscriber::fmt::MakeWriter;

/// Makes a [`RedactingWriter`] over a fresh inner writer for each event.
#[derive(Debug, Clone)]
pub struct RedactingMakeWriter<M> {
    inner: M,
}

impl<M> RedactingMakeWriter<M> {
    /// Redacting writers over the writers `inner` makes.
    pub fn new(inner: M) -> Self {
        Self { inner }
    }
}

impl<'a, M> MakeWriter<'a> for RedactingMakeWriter<M>
where
    M: MakeWriter<'a>,
{
    type Writer = RedactingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter { buf: Vec::new(), inner: self.inner.make_writer() }
    }
}

/// Collects what the formatter writes for one event; on flush or drop writes it redacted as
/// one line (newlines inside a message become spaces, so a message cannot forge log lines).
#[derive(Debug)]
pub struct RedactingWriter<W: Write> {
    buf: Vec<u8>,
    inner: W,
}

impl<W: Write> RedactingWriter<W> {
    fn emit(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&self.buf).into_owned();
        self.buf.clear();
        let mut line = redact_log_line(text.trim_end_matches(['\r', '\n']), LOG_LINE_CAP);
        line.push('\n');
        self.inner.write_all(line.as_bytes())?;
        self.inner.flush()
    }
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.emit()
    }
}

impl<W: Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        // Nowhere to report a failed log write: the line is lost, the bridge keeps going.
        let _ = self.emit();
    }
}
