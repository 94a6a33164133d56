//! The redacting writer under a real `tracing` subscriber: fields, messages and forwarded
//! engine lines come out redacted, one line per event, the words around a secret kept.

use std::io;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;

use crate::RedactingMakeWriter;

#[derive(Debug, Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

fn logged(emit: impl FnOnce()) -> String {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(RedactingMakeWriter::new(captured.clone()))
        .with_ansi(false)
        .without_time()
        .finish();
    tracing::subscriber::with_default(subscriber, emit);
    String::from_utf8(captured.0.lock().unwrap().clone()).unwrap()
}

#[test]
fn every_line_is_redacted_and_the_rest_kept() {
    let cases: [(&str, &str, &str); 4] = [
        ("Authorization: Bearer abcDEF123456 now", "abcDEF123456", "now"),
        ("engine said KILO_SERVER_PASSWORD=pw-0123 at start", "pw-0123", "at start"),
        ("GET http://127.0.0.1:4096/event?token=tok-9 ok", "tok-9", "ok"),
        ("key sk-proj-AbCdEf0123456789xyzXYZ used", "sk-proj-AbCdEf0123456789xyzXYZ", "used"),
    ];
    for (text, secret, kept) in cases {
        let out =
            logged(|| tracing::info!(target: "bb_engine", pid = 7, stream = "stderr", "{text}"));
        assert!(!out.contains(secret), "{out}");
        assert!(out.contains(kept) && out.contains("[REDACTED]"), "{out}");
        assert!(out.contains("pid=7"), "{out}");
        assert_eq!(out.matches('\n').count(), 1, "one event, one line: {out}");
    }
}

#[test]
fn fields_and_multi_line_messages_are_redacted_too() {
    let out = logged(|| {
        tracing::warn!(password = "hunter2", user = "kilo", "first\nCookie: sid=abc; x=1 done");
    });
    assert!(!out.contains("hunter2") && !out.contains("sid=abc"), "{out}");
    assert!(out.contains("user=\"kilo\"") || out.contains("user=kilo"), "{out}");
    assert!(out.contains("done"), "{out}");
    assert_eq!(out.matches('\n').count(), 1, "{out}");
}
