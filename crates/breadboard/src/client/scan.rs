//! An event envelope read in one pass over its bytes, for the common case: its top-level
//! keys compared as bytes, the fields the bridge keeps read as their loose types read them,
//! every other value skipped (and checked to be JSON), and the payload scanned as it is
//! kept ([`Payload::as_written_fields_leading`]) in the same pass. Anything else gives up,
//! and the envelope is read with serde (`BbEvent::parse_serde`), so that every result is the
//! one that read gives.
//!
//! serde_json's derived read walks each of the engine's 13 fields through `next_key` and
//! `ignore_value` to keep five; this is most of an event's parse.

use bb_normalize::breadboard::TEXT_FIELDS;
use bb_payload::{Field, Payload, string_stop};

/// Deepest nesting of a skipped value read here (serde_json's limit is 128).
const MAX_DEPTH: usize = 64;

/// The envelope's fields the bridge keeps, as its serde read finds them (`wire.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Head<'a> {
    pub(super) seq: Option<u64>,
    pub(super) kind: Option<&'a str>,
    pub(super) turn: Option<i64>,
    /// `timestamp_ms` when present (even as `null`), else `timestamp`.
    pub(super) timestamp_ms: Option<u64>,
}

/// An envelope as [`envelope`] read it.
pub(super) struct Scanned<'a> {
    pub(super) head: Head<'a>,
    /// The object payload kept as its tree is written, with where its [`TEXT_FIELDS`] are;
    /// `None` when there is none (absent or `null`).
    pub(super) payload: Option<(Payload, [Field; 4])>,
}

/// `data` read in one pass, or `None` when this scan does not decide it: a key written
/// with an escape or sent twice (of the fields read), a `type` written with an escape, a
/// number in a field read that is not a plain non-negative integer (of up to 19 digits), a
/// payload that is not an object or `null` or is not kept as text, a `\u` escape of a
/// surrogate or nesting deeper than 64 in a skipped value, text that is not JSON or not an
/// object. The serde read decides those.
pub(super) fn envelope(data: &str) -> Option<Scanned<'_>> {
    let mut s = Scan { text: data, pos: 0 };
    let mut head = Head::default();
    let (mut timestamp_ms, mut timestamp) = (None, None);
    let mut payload = None;
    let mut seen = 0u8;
    s.whitespace();
    s.eat(b'{')?;
    s.whitespace();
    if s.peek()? == b'}' {
        s.pos += 1;
    } else {
        loop {
            s.whitespace();
            let key = s.key()?;
            s.whitespace();
            s.eat(b':')?;
            s.whitespace();
            let bit = field_bit(key);
            if seen & bit != 0 {
                // serde refuses a field twice.
                return None;
            }
            seen |= bit;
            match bit {
                1 => head.seq = s.uint()?,
                2 => head.kind = s.str_or_other()?,
                4 => head.turn = s.uint()?.and_then(|u| i64::try_from(u).ok()),
                8 => timestamp_ms = Some(s.uint()?),
                16 => timestamp = s.uint()?,
                32 => payload = s.payload()?,
                _ => s.skip(1)?,
            }
            s.whitespace();
            match s.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
    }
    s.whitespace();
    if s.pos != data.len() {
        return None;
    }
    head.timestamp_ms = timestamp_ms.unwrap_or(timestamp);
    Some(Scanned { head, payload })
}

/// The bit of the envelope's field named `key` in [`envelope`]'s set of fields seen, 0 for a
/// field not read. Compared by length, then as words (`==` on a slice of a known length);
/// a `match` on byte-string patterns compares a byte at a time.
fn field_bit(key: &[u8]) -> u8 {
    match key.len() {
        3 if key == b"seq" => 1,
        4 if key == b"type" => 2,
        4 if key == b"turn" => 4,
        12 if key == b"timestamp_ms" => 8,
        9 if key == b"timestamp" => 16,
        7 if key == b"payload" => 32,
        _ => 0,
    }
}

/// The scan's place in the envelope's text.
struct Scan<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    fn whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn word(&mut self, word: &str) -> Option<()> {
        self.text[self.pos..].starts_with(word).then(|| self.pos += word.len())
    }

    /// A key without escapes: its bytes between the quotes. A key with an escape or a
    /// control character is not decided here.
    #[inline(always)]
    fn key(&mut self) -> Option<&'a [u8]> {
        let bytes = self.text.as_bytes();
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.pos + 1;
        let end = string_stop(bytes, start)?;
        if bytes[end] != b'"' {
            return None;
        }
        self.pos = end + 1;
        bytes.get(start..end)
    }

    /// A string (at its opening quote): its text between the quotes, and whether it is
    /// written with an escape. `None` for a control character, a bad escape, a `\u` of a
    /// surrogate (read by serde, which checks it where it reads the string). A string
    /// without escapes (most) is read here; one with an escape by [`Scan::escaped`].
    #[inline(always)]
    fn string(&mut self) -> Option<(&'a str, bool)> {
        let bytes = self.text.as_bytes();
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.pos + 1;
        let end = string_stop(bytes, start)?;
        if bytes[end] != b'"' {
            return self.escaped(start, end);
        }
        self.pos = end + 1;
        Some((self.text.get(start..end)?, false))
    }

    /// The rest of the string that opens at `start - 1`, from `at`, the first `\\` or control
    /// character in it: as [`Scan::string`].
    #[inline(never)]
    fn escaped(&mut self, start: usize, at: usize) -> Option<(&'a str, bool)> {
        let bytes = self.text.as_bytes();
        self.pos = at;
        loop {
            match bytes[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Some((self.text.get(start..self.pos - 1)?, true));
                }
                b'\\' => {}
                _ => return None,
            }
            match *bytes.get(self.pos + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 2,
                b'u' => {
                    let hex = bytes.get(self.pos + 2..self.pos + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) || matches!(hex[0], b'd' | b'D') {
                        // Not hex, or maybe a surrogate (D800-DFFF, and D000-D7FF with them).
                        return None;
                    }
                    self.pos += 6;
                }
                _ => return None,
            }
            self.pos = string_stop(bytes, self.pos)?;
        }
    }

    /// A value read as `LooseStr` reads it: a string without escapes, or `None` for any
    /// other value (skipped).
    fn str_or_other(&mut self) -> Option<Option<&'a str>> {
        if self.peek()? != b'"' {
            return self.skip(1).map(|()| None);
        }
        match self.string()? {
            (text, false) => Some(Some(text)),
            (_, true) => None,
        }
    }

    /// A value read as `LooseU64` reads it: a plain non-negative integer (up to 19 digits,
    /// which all fit), or `None` for any value that is no number (skipped). Other numbers
    /// are not read here. The digits are found and added up in one loop over the text (no
    /// bounds check a digit); a 20th digit ends it: too many.
    fn uint(&mut self) -> Option<Option<u64>> {
        let rest = self.text.as_bytes().get(self.pos..)?;
        let first = *rest.first()?;
        if !first.is_ascii_digit() {
            if first == b'-' {
                return None;
            }
            return self.skip(1).map(|()| None);
        }
        let mut n = 0u64;
        let mut len = 0;
        for &b in rest.iter().take(20) {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            // 19 digits fit; with a 20th the value is refused below, whatever it wrapped to.
            n = n.wrapping_mul(10).wrapping_add(u64::from(digit));
            len += 1;
        }
        self.pos += len;
        let fraction = matches!(rest.get(len), Some(b'.' | b'e' | b'E'));
        if fraction || len > 19 || (first == b'0' && len > 1) {
            return None;
        }
        Some(Some(n))
    }

    /// The payload: an object kept as its tree is written, or `None` for `null`.
    fn payload(&mut self) -> Option<Option<(Payload, [Field; 4])>> {
        match self.peek()? {
            b'{' => {
                let (payload, found, len) =
                    Payload::as_written_fields_leading(&self.text[self.pos..], TEXT_FIELDS)?;
                self.pos += len;
                Some(Some((payload, found)))
            }
            b'n' => self.word("null").map(|()| None),
            _ => None,
        }
    }

    /// Any JSON value at nesting `depth`, unread.
    fn skip(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.nested(depth, b'}', true),
            b'[' => self.nested(depth, b']', false),
            b't' => self.word("true"),
            b'f' => self.word("false"),
            b'n' => self.word("null"),
            _ => self.number(),
        }
    }

    /// An object (`keyed`) or an array, unread.
    fn nested(&mut self, depth: usize, close: u8, keyed: bool) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        self.whitespace();
        if self.peek()? == close {
            self.pos += 1;
            return Some(());
        }
        loop {
            self.whitespace();
            if keyed {
                self.string()?;
                self.whitespace();
                self.eat(b':')?;
                self.whitespace();
            }
            self.skip(depth + 1)?;
            self.whitespace();
            match self.next()? {
                b',' => {}
                b if b == close => return Some(()),
                _ => return None,
            }
        }
    }

    /// A number as JSON writes one: `-`, an integer without a leading zero, a fraction, an
    /// exponent.
    fn number(&mut self) -> Option<()> {
        if self.peek()? == b'-' {
            self.pos += 1;
        }
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    /// At least one digit.
    fn some_digits(&mut self) -> Option<()> {
        self.peek().filter(u8::is_ascii_digit)?;
        self.digits();
        Some(())
    }
}
