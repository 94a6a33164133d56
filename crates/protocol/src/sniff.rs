//! `IdSniffer`: reads the request id of a message that cannot be decoded (too long, nested too
//! deep, not UTF-8, not JSON), so the sender still gets its error response. Incremental and
//! bounded: bytes are fed in chunks as they arrive, only the top-level `id` and `kind` values
//! (each capped) are kept, so an over-long line need never be held whole.

/// Longest request id the sniffer reads back, in raw (escaped) bytes. A longer id is not
/// readable: such a request gets no response, only a log line.
pub const MAX_SNIFFED_ID_BYTES: usize = 1024;

/// Longest top-level key remembered while sniffing, in raw bytes (`kind` written with every
/// letter escaped, `\u006b\u0069\u006e\u0064`, is 24).
const MAX_KEY_BYTES: usize = 32;

/// Which top-level field a value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Id,
    Kind,
    Other,
}

/// Where the scanner is, at the top level of the outer object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Before the outer `{`.
    Open,
    Key,
    Colon,
    Value,
    /// After a value, before `,` or `}`.
    Next,
    /// The outer object closed, or the input is not an object: nothing more is read.
    Done,
}

/// The string being captured at the top level, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Capture {
    None,
    Key(Vec<u8>, bool),
    Value(Field, Vec<u8>, bool),
}

/// Scans one message, chunk by chunk, for its top-level `"kind"` and `"id"` strings. It
/// tolerates anything (invalid UTF-8, truncation, garbage after the object); nesting is
/// counted, never recursed into. The last occurrence of a duplicated key wins, as in the
/// decoder.
#[derive(Debug, Clone)]
pub struct IdSniffer {
    expect: Expect,
    depth: usize,
    in_string: bool,
    escaped: bool,
    field: Field,
    capture: Capture,
    id: Option<Vec<u8>>,
    kind: Option<Vec<u8>>,
}

impl Default for IdSniffer {
    fn default() -> Self {
        Self::new()
    }
}

impl IdSniffer {
    /// A sniffer at the start of a message.
    pub fn new() -> Self {
        Self {
            expect: Expect::Open,
            depth: 0,
            in_string: false,
            escaped: false,
            field: Field::Other,
            capture: Capture::None,
            id: None,
            kind: None,
        }
    }

    /// Feeds the next bytes of the message.
    pub fn push(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if self.expect == Expect::Done {
                return;
            }
            self.step(b);
        }
    }

    /// The request id, when the message reads as a request (`"kind": "req"`) with a string
    /// id of at most [`MAX_SNIFFED_ID_BYTES`] that is valid UTF-8 JSON.
    pub fn request_id(&self) -> Option<String> {
        if unescape(self.kind.as_deref()?).as_deref() != Some("req") {
            return None;
        }
        unescape(self.id.as_deref()?)
    }

    fn step(&mut self, b: u8) {
        if self.in_string {
            self.string_byte(b);
            return;
        }
        if b.is_ascii_whitespace() {
            return;
        }
        if self.depth > 1 {
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 1 {
                        self.expect = Expect::Next;
                    }
                }
                _ => {}
            }
            return;
        }
        match (self.expect, b) {
            (Expect::Open, b'{') => {
                self.depth = 1;
                self.expect = Expect::Key;
            }
            (Expect::Key, b'"') => {
                self.in_string = true;
                self.capture = Capture::Key(Vec::new(), false);
            }
            (Expect::Colon, b':') => self.expect = Expect::Value,
            (Expect::Value, b'"') => {
                self.in_string = true;
                let field = self.field;
                self.capture = Capture::Value(field, Vec::new(), false);
            }
            (Expect::Value, b'{' | b'[') => {
                self.forget(self.field);
                self.depth = 2;
            }
            (Expect::Value, _) => {
                // A number, literal or garbage: the field is not a readable string.
                self.forget(self.field);
                self.expect = Expect::Next;
            }
            (Expect::Next, b',') => self.expect = Expect::Key,
            (Expect::Next, _) if b != b'}' => {}
            (_, b'}') => self.expect = Expect::Done,
            (Expect::Open, _) => self.expect = Expect::Done,
            _ => {}
        }
    }

    fn string_byte(&mut self, b: u8) {
        let closes = !self.escaped && b == b'"';
        self.escaped = !self.escaped && b == b'\\';
        if !closes {
            match &mut self.capture {
                Capture::Key(buf, over) => keep(buf, over, b, MAX_KEY_BYTES),
                Capture::Value(_, buf, over) => keep(buf, over, b, MAX_SNIFFED_ID_BYTES),
                Capture::None => {}
            }
            return;
        }
        self.in_string = false;
        match std::mem::replace(&mut self.capture, Capture::None) {
            Capture::Key(key, over) => {
                let key = if over { None } else { unescape(&key) };
                self.field = match key.as_deref() {
                    Some("id") => Field::Id,
                    Some("kind") => Field::Kind,
                    _ => Field::Other,
                };
                self.expect = Expect::Colon;
            }
            Capture::Value(field, value, over) => {
                let value = (!over).then_some(value);
                match field {
                    Field::Id => self.id = value,
                    Field::Kind => self.kind = value,
                    Field::Other => {}
                }
                self.expect = Expect::Next;
            }
            Capture::None => {}
        }
    }

    fn forget(&mut self, field: Field) {
        match field {
            Field::Id => self.id = None,
            Field::Kind => self.kind = None,
            Field::Other => {}
        }
    }
}

/// The text of a JSON string literal's raw contents (escapes resolved), if valid.
fn unescape(raw: &[u8]) -> Option<String> {
    if !raw.contains(&b'\\') {
        return std::str::from_utf8(raw).ok().map(str::to_owned);
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted).ok()
}

fn keep(buf: &mut Vec<u8>, over: &mut bool, b: u8, cap: usize) {
    if buf.len() < cap {
        buf.push(b);
    } else {
        *over = true;
    }
}

/// The request id of a whole raw message, read as [`IdSniffer`] does.
pub fn sniff_request_id(raw: &[u8]) -> Option<String> {
    let mut sniffer = IdSniffer::new();
    sniffer.push(raw);
    sniffer.request_id()
}
