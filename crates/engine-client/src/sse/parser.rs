//! The sans-IO `text/event-stream` parser: bytes in, events out, following the WHATWG rules.

use std::borrow::Cow;
use std::fmt;

use bb_payload::EventId;

/// Bounds that keep a hostile or broken stream from growing memory without limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseLimits {
    /// Longest accepted line, in bytes, without its terminator.
    pub max_line_bytes: usize,
    /// Largest accepted event (data buffer plus event type), in bytes.
    pub max_event_bytes: usize,
}

impl SseLimits {
    /// The default event limit: 16 MiB of data (plus event type).
    pub const DEFAULT_EVENT_BYTES: usize = 16 * 1024 * 1024;

    /// Limits where one line may carry a whole event: the line cap is the event cap plus room
    /// for the longest field name and its `: ` (so a single `data:` line is bounded by the
    /// event limit, not by a smaller line limit).
    pub fn for_events(max_event_bytes: usize) -> Self {
        Self { max_line_bytes: max_event_bytes.saturating_add(16), max_event_bytes }
    }
}

impl Default for SseLimits {
    /// 16 MiB per event, and a line may be as long as an event (a ~10 MiB `data:` line is
    /// accepted, as LaunchDarkly's `sse-contract-tests` "large message in two chunks" needs).
    fn default() -> Self {
        Self::for_events(Self::DEFAULT_EVENT_BYTES)
    }
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field, or `"message"` when the event had none (then borrowed: most
    /// streams name no type, and their events cost no allocation for it).
    pub event_type: Cow<'static, str>,
    /// The `data` lines joined by `\n`.
    pub data: String,
    /// The stream's last event id at dispatch time (persists across events); a short one
    /// is copied inline, so an event costs no allocation for it.
    pub last_event_id: EventId,
}

/// What the parser yields, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event.
    Event(SseEvent),
    /// A valid `retry` field: the new reconnection time in milliseconds.
    Retry(u64),
    /// A comment line (`:` first), without the colon.
    Comment(String),
}

/// Why the parser refused the stream. After an error the parser stays failed (every later
/// [`SseParser::feed`] returns the same error) until [`SseParser::reset_stream`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// A line grew past [`SseLimits::max_line_bytes`].
    #[error("SSE line longer than {limit} bytes")]
    LineTooLong {
        /// The limit that was exceeded.
        limit: usize,
    },
    /// An event grew past [`SseLimits::max_event_bytes`].
    #[error("SSE event larger than {limit} bytes")]
    EventTooLarge {
        /// The limit that was exceeded.
        limit: usize,
    },
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Incremental event-stream parser. Feed it byte chunks split anywhere; it yields the same
/// items whatever the split.
pub struct SseParser {
    limits: SseLimits,
    /// Bytes of the current, unterminated line.
    line: Vec<u8>,
    /// Bytes seen at stream start while deciding whether they are a BOM.
    bom_pending: Vec<u8>,
    at_stream_start: bool,
    /// The previous chunk ended with CR: a leading LF in the next chunk belongs to it.
    skip_lf: bool,
    /// The event's `data` lines joined by `\n`; the spec's buffer, which ends every line with
    /// `\n`, is this plus one `\n` once `has_data` (the event then takes it as it is).
    data: String,
    /// A `data` line came since the last dispatch.
    has_data: bool,
    event_type: String,
    /// The spec's last event ID buffer, when `id_set`; else the buffer is
    /// `last_event_id`, and this holds whatever it held last (its room is reused).
    id_buffer: String,
    /// An `id` line came since the last dispatch: `id_buffer` holds its value. A dispatch
    /// then swaps it into `last_event_id` rather than copying it.
    id_set: bool,
    last_event_id: String,
    failed: Option<SseError>,
}

impl fmt::Debug for SseParser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseParser")
            .field("limits", &self.limits)
            .field("buffered_line_bytes", &self.line.len())
            .field("buffered_data_bytes", &self.data.len())
            .field("last_event_id", &self.last_event_id)
            .field("failed", &self.failed)
            .finish()
    }
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new(SseLimits::default())
    }
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new(limits: SseLimits) -> Self {
        Self {
            limits,
            line: Vec::new(),
            bom_pending: Vec::new(),
            at_stream_start: true,
            skip_lf: false,
            data: String::new(),
            has_data: false,
            event_type: String::new(),
            id_buffer: String::new(),
            id_set: false,
            last_event_id: String::new(),
            failed: None,
        }
    }

    /// The last event id of the stream (set when an event is dispatched).
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// Sets the last event id, e.g. when resuming from a persisted id.
    pub fn set_last_event_id(&mut self, id: impl Into<String>) {
        self.last_event_id = id.into();
        self.id_set = false;
    }

    /// Starts a new connection's stream: discards any partial line or event, accepts a BOM
    /// again and clears a failure, but keeps the last event id.
    pub fn reset_stream(&mut self) {
        self.line.clear();
        self.bom_pending.clear();
        self.at_stream_start = true;
        self.skip_lf = false;
        self.data.clear();
        self.has_data = false;
        self.event_type.clear();
        self.id_set = false;
        self.failed = None;
    }

    /// Takes back an event's `data` once its reader is done with it: the next event's data is
    /// written into it (its room kept up to [`SseParser::REUSED_DATA_BYTES`]), so a reader
    /// that only reads each event's data costs no allocation per event for it.
    pub fn reuse_data(&mut self, mut data: String) {
        if self.data.capacity() == 0 && data.capacity() <= Self::REUSED_DATA_BYTES {
            data.clear();
            self.data = data;
        }
    }

    /// The most room [`SseParser::reuse_data`] keeps: a rare large event's buffer is not held
    /// for the stream's life.
    pub const REUSED_DATA_BYTES: usize = 64 << 10;

    /// Parses `chunk`, appending every item it completes to `out`. Items completed before an
    /// error are kept in `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let result = self.feed_inner(chunk, out);
        if let Err(err) = &result {
            self.failed = Some(err.clone());
            self.line.clear();
            self.data.clear();
            self.has_data = false;
            self.event_type.clear();
        }
        result
    }

    /// Convenience: parses `chunk` and returns the items it completes.
    pub fn feed_collect(&mut self, chunk: &[u8]) -> Result<Vec<SseItem>, SseError> {
        let mut out = Vec::new();
        self.feed(chunk, &mut out).map(|()| out)
    }

    fn feed_inner(&mut self, mut chunk: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        if self.at_stream_start {
            let Some(rest) = self.strip_bom(chunk, out)? else {
                return Ok(());
            };
            chunk = rest;
        }
        self.scan(chunk, out)
    }

    /// Consumes a leading BOM, possibly split over chunks. Returns the bytes left to parse,
    /// or `None` while it cannot decide yet.
    fn strip_bom<'a>(
        &mut self,
        chunk: &'a [u8],
        out: &mut Vec<SseItem>,
    ) -> Result<Option<&'a [u8]>, SseError> {
        if self.bom_pending.is_empty() && chunk.len() >= BOM.len() {
            self.at_stream_start = false;
            return Ok(Some(chunk.strip_prefix(BOM).unwrap_or(chunk)));
        }
        let mut taken = 0;
        while self.bom_pending.len() < BOM.len() && taken < chunk.len() {
            self.bom_pending.push(chunk[taken]);
            taken += 1;
        }
        let is_prefix = BOM.starts_with(&self.bom_pending);
        if is_prefix && self.bom_pending.len() < BOM.len() {
            return Ok(None);
        }
        self.at_stream_start = false;
        let pending = std::mem::take(&mut self.bom_pending);
        if !is_prefix {
            self.scan(&pending, out)?;
        }
        Ok(Some(&chunk[taken..]))
    }

    fn scan(&mut self, mut chunk: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        if self.skip_lf && !chunk.is_empty() {
            self.skip_lf = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(end) = line_end(chunk) {
            let (head, rest) = chunk.split_at(end);
            if self.line.is_empty() {
                self.check_line_len(head.len())?;
                self.process_line(head, out)?;
            } else {
                self.check_line_len(self.line.len() + head.len())?;
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                let result = self.process_line(&line, out);
                line.clear();
                self.line = line;
                result?;
            }
            chunk = match rest {
                [b'\r', b'\n', tail @ ..] => tail,
                [b'\r'] => {
                    self.skip_lf = true;
                    &[]
                }
                [_, tail @ ..] => tail,
                [] => &[],
            };
        }
        if !chunk.is_empty() {
            self.check_line_len(self.line.len() + chunk.len())?;
            self.line.extend_from_slice(chunk);
        }
        Ok(())
    }

    fn check_line_len(&self, len: usize) -> Result<(), SseError> {
        if len > self.limits.max_line_bytes {
            return Err(SseError::LineTooLong { limit: self.limits.max_line_bytes });
        }
        Ok(())
    }

    /// One line without its terminator. The field is told by the line's first byte and then
    /// its name, in one match: no search for the colon on the lines the spec names.
    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        match line.first() {
            None => self.dispatch(out),
            Some(b':') => out.push(SseItem::Comment(decode(&line[1..]).into_owned())),
            Some(b'd') => {
                if let Some(value) = value_of(line, b"data") {
                    self.data_line(value)?;
                }
            }
            Some(b'i') => {
                if let Some(value) = value_of(line, b"id") {
                    self.id_line(value);
                }
            }
            Some(b'e') => {
                if let Some(value) = value_of(line, b"event") {
                    let value = decode(value);
                    self.event_type.clear();
                    self.check_event_len(value.len())?;
                    self.event_type.push_str(&value);
                }
            }
            Some(b'r') => {
                if let Some(value) = value_of(line, b"retry")
                    && !value.is_empty()
                    && value.iter().all(u8::is_ascii_digit)
                {
                    let ms = value.iter().fold(0u64, |acc, digit| {
                        acc.saturating_mul(10).saturating_add(u64::from(digit - b'0'))
                    });
                    out.push(SseItem::Retry(ms));
                }
            }
            // Any other field is ignored.
            Some(_) => {}
        }
        Ok(())
    }

    /// An `id` line's value (ignored when it holds a NUL), into the reused last-id buffer.
    /// An id is short (a sequence number, a UUID): one of ASCII bytes without a NUL, the
    /// usual kind, is checked and copied in one pass over its bytes, a few instructions a
    /// byte, where the UTF-8 check of a short slice cost ~90 instructions and the copy a
    /// `memcpy` call; any other is checked for a NUL, then decoded.
    fn id_line(&mut self, value: &[u8]) {
        if value.iter().all(|&b| b != 0 && b.is_ascii()) {
            self.id_buffer.clear();
            self.id_buffer.extend(value.iter().map(|&b| char::from(b)));
        } else if value.contains(&0) {
            // Ignored: an id set earlier in the event stays.
            return;
        } else {
            self.id_buffer.clear();
            self.id_buffer.push_str(&decode(value));
        }
        self.id_set = true;
    }

    /// A `data` line's value. The event's first line is copied once, into a buffer of its
    /// size that the event then takes (or one given back, [`SseParser::reuse_data`]); the
    /// spec's trailing `\n` is never written.
    fn data_line(&mut self, value: &[u8]) -> Result<(), SseError> {
        let value = decode(value);
        self.check_event_len(value.len() + 1)?;
        if self.has_data {
            self.data.reserve(value.len() + 1);
            self.data.push('\n');
        } else if self.data.capacity() == 0 {
            self.data = String::with_capacity(value.len());
        }
        self.data.push_str(&value);
        self.has_data = true;
        Ok(())
    }

    /// Fails when the event (its data as the spec buffers it, and its type) plus `extra` bytes
    /// passes the limit.
    fn check_event_len(&self, extra: usize) -> Result<(), SseError> {
        let buffered = self.data.len() + usize::from(self.has_data) + self.event_type.len();
        if buffered + extra > self.limits.max_event_bytes {
            return Err(SseError::EventTooLarge { limit: self.limits.max_event_bytes });
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        if std::mem::take(&mut self.id_set) {
            std::mem::swap(&mut self.last_event_id, &mut self.id_buffer);
        }
        if !self.has_data {
            self.event_type.clear();
            return;
        }
        self.has_data = false;
        let event_type = if self.event_type.is_empty() {
            Cow::Borrowed("message")
        } else {
            Cow::Owned(std::mem::take(&mut self.event_type))
        };
        out.push(SseItem::Event(SseEvent {
            event_type,
            data: std::mem::take(&mut self.data),
            last_event_id: EventId::from(self.last_event_id.as_str()),
        }));
    }
}

/// The value of `line` when its field is `name`: the rest after the colon less one leading
/// space, or empty when the line is the name alone. `None` for any other field (one that
/// only begins with `name`).
fn value_of<'a>(line: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    match line.strip_prefix(name)? {
        [] => Some(&[]),
        [b':', b' ', value @ ..] | [b':', value @ ..] => Some(value),
        _ => None,
    }
}

/// Where the first CR or LF of `bytes` is. The first 16 bytes are looked at as two
/// eight-byte words ([`cr_or_lf`]; a blank line, a short `id:` line or the start of a `data:`
/// line costs no call and ~6 instructions a word, where a byte at a time cost ~8 a byte);
/// bytes left over that make no whole word are looked at one by one, and `memchr2` searches
/// past the first 16.
fn line_end(bytes: &[u8]) -> Option<usize> {
    const BY_HAND: usize = 16;
    let head = &bytes[..bytes.len().min(BY_HAND)];
    let mut at = 0;
    while let Some(word) = head[at..].first_chunk::<8>() {
        let found = cr_or_lf(u64::from_le_bytes(*word));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    if let Some(more) = head[at..].iter().position(|&b| b == b'\r' || b == b'\n') {
        return Some(at + more);
    }
    if head.len() == bytes.len() {
        return None;
    }
    memchr::memchr2(b'\r', b'\n', &bytes[BY_HAND..]).map(|more| BY_HAND + more)
}

/// The bytes of `word` (little-endian: its first byte lowest) that are CR or LF, as their high
/// bits. Exact up to the first one: a byte's borrow can only mark bytes above a match, so
/// the lowest bit set is the first CR or LF.
fn cr_or_lf(word: u64) -> u64 {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES << 7;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    zero(word ^ (ONES * u64::from(b'\r'))) | zero(word ^ (ONES * u64::from(b'\n')))
}

/// UTF-8 decoding with replacement; the strict validator is much faster on valid input
/// (`simdutf8`'s: SIMD on lines of 64 bytes or more, an event's `data` line; std's below).
fn decode(bytes: &[u8]) -> Cow<'_, str> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}
