//! Local redaction of engine log lines: known secrets replaced, lines capped.

use secrecy::{ExposeSecret, SecretString};

/// What replaces a known secret in a log line.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces the known secrets in engine output and caps line length.
#[derive(Debug, Clone)]
pub struct LineRedactor {
    secrets: Vec<SecretString>,
    max_len: usize,
}

impl LineRedactor {
    /// A redactor for `secrets` (empty ones are ignored) keeping at most `max_len` bytes.
    pub fn new(secrets: Vec<SecretString>, max_len: usize) -> Self {
        let secrets = secrets.into_iter().filter(|s| !s.expose_secret().is_empty()).collect();
        Self { secrets, max_len }
    }

    /// The redacted, capped line. `truncated` is true when the raw line was longer than what
    /// was read; a marker with the dropped byte count is appended then.
    pub fn apply(&self, raw: &[u8], dropped: usize) -> String {
        let mut line = String::from_utf8_lossy(raw).into_owned();
        for secret in &self.secrets {
            let s = secret.expose_secret();
            if line.contains(s) {
                line = line.replace(s, REDACTED);
            }
        }
        let mut extra = dropped;
        if line.len() > self.max_len {
            let cut = line.floor_char_boundary(self.max_len);
            extra += line.len() - cut;
            line.truncate(cut);
        }
        if extra > 0 {
            line.push_str(&format!(" …[{extra} bytes truncated]"));
        }
        line
    }
}
