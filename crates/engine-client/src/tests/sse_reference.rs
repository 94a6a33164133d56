//! The parser as it was before the one-pass field match (`48cb341`), kept as the reference the
//! parser is held to: any stream, split anywhere, with resets and set ids between chunks,
//! yields the same items and errors from both.

use std::borrow::Cow;

use proptest::prelude::*;

use crate::sse::{SseError, SseEvent, SseItem, SseLimits, SseParser};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The parser of `48cb341`, unchanged but for its name and the accessors no test calls.
struct Reference {
    limits: SseLimits,
    /// Bytes of the current, unterminated line.
    line: Vec<u8>,
    /// Bytes seen at stream start while deciding whether they are a BOM.
    bom_pending: Vec<u8>,
    at_stream_start: bool,
    /// The previous chunk ended with CR: a leading LF in the next chunk belongs to it.
    skip_lf: bool,
    data: String,
    event_type: String,
    id_buffer: String,
    last_event_id: String,
    failed: Option<SseError>,
}

impl Reference {
    /// A parser at the start of a stream.
    fn new(limits: SseLimits) -> Self {
        Self {
            limits,
            line: Vec::new(),
            bom_pending: Vec::new(),
            at_stream_start: true,
            skip_lf: false,
            data: String::new(),
            event_type: String::new(),
            id_buffer: String::new(),
            last_event_id: String::new(),
            failed: None,
        }
    }

    /// Sets the last event id, e.g. when resuming from a persisted id.
    fn set_last_event_id(&mut self, id: impl Into<String>) {
        self.last_event_id = id.into();
        self.id_buffer.clone_from(&self.last_event_id);
    }

    /// Starts a new connection's stream: discards any partial line or event, accepts a BOM
    /// again and clears a failure, but keeps the last event id.
    fn reset_stream(&mut self) {
        self.line.clear();
        self.bom_pending.clear();
        self.at_stream_start = true;
        self.skip_lf = false;
        self.data.clear();
        self.event_type.clear();
        self.id_buffer.clone_from(&self.last_event_id);
        self.failed = None;
    }

    /// Parses `chunk`, appending every item it completes to `out`. Items completed before an
    /// error are kept in `out`.
    fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let result = self.feed_inner(chunk, out);
        if let Err(err) = &result {
            self.failed = Some(err.clone());
            self.line.clear();
            self.data.clear();
            self.event_type.clear();
        }
        result
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
        while let Some(end) = memchr::memchr2(b'\r', b'\n', chunk) {
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

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(0) => {
                out.push(SseItem::Comment(decode(&line[1..]).into_owned()));
                return Ok(());
            }
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                let value = decode(value);
                self.check_event_len(value.len() + 1)?;
                self.data.reserve(value.len() + 1);
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"event" => {
                let value = decode(value);
                self.event_type.clear();
                self.check_event_len(value.len())?;
                self.event_type.push_str(&value);
            }
            b"id" if !value.contains(&0) => {
                // The buffer is reused: an id per event costs one allocation, the copy the
                // event carries.
                self.id_buffer.clear();
                self.id_buffer.push_str(&decode(value));
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().fold(0u64, |acc, digit| {
                    acc.saturating_mul(10).saturating_add(u64::from(digit - b'0'))
                });
                out.push(SseItem::Retry(ms));
            }
            _ => {}
        }
        Ok(())
    }

    fn check_event_len(&self, extra: usize) -> Result<(), SseError> {
        if self.data.len() + self.event_type.len() + extra > self.limits.max_event_bytes {
            return Err(SseError::EventTooLarge { limit: self.limits.max_event_bytes });
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        self.last_event_id.clone_from(&self.id_buffer);
        if self.data.is_empty() {
            self.event_type.clear();
            return;
        }
        if self.data.ends_with('\n') {
            self.data.pop();
        }
        let event_type = if self.event_type.is_empty() {
            Cow::Borrowed("message")
        } else {
            Cow::Owned(std::mem::take(&mut self.event_type))
        };
        out.push(SseItem::Event(SseEvent {
            event_type,
            data: std::mem::take(&mut self.data),
            last_event_id: self.last_event_id.as_str().into(),
        }));
    }
}

/// UTF-8 decoding with replacement; the strict validator is much faster on valid input
/// (`simdutf8`'s: SIMD on lines of 64 bytes or more, an event's `data` line; std's below).
fn decode(bytes: &[u8]) -> Cow<'_, str> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// What a test does to both parsers.
#[derive(Debug, Clone)]
enum Op {
    Feed(Vec<u8>),
    Reset,
    SetId(String),
}

/// Pieces that matter to the grammar: field names right and nearly right, values short and
/// long (past the 64 bytes where UTF-8 checks change method), every terminator, BOM bytes
/// apart, multi-byte and invalid UTF-8, NUL.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    let whole_line = prop_oneof![
        "data: [a-z]{0,4}\n".prop_map(String::into_bytes),
        "data:[a-z]{0,4}\r\n".prop_map(String::into_bytes),
        "event: [a-z]{0,4}\n".prop_map(String::into_bytes),
        "id: [0-9]{0,3}\n".prop_map(String::into_bytes),
        Just(b"\n".to_vec()),
    ];
    let part = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"data".to_vec()),
        Just(b"dat".to_vec()),
        Just(b"datax: y".to_vec()),
        Just(b"event: e".to_vec()),
        Just(b"event".to_vec()),
        Just(b"event:message".to_vec()),
        Just(b"id: 1".to_vec()),
        Just(b"id:".to_vec()),
        Just(b"id".to_vec()),
        Just(b"ids: 3".to_vec()),
        Just(b"id: \x002".to_vec()),
        Just(b"retry: 100".to_vec()),
        Just(b"retry".to_vec()),
        Just(b"retry: 1x".to_vec()),
        Just(b": c".to_vec()),
        Just(b":".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b"\xEF".to_vec()),
        Just(b"\xBB\xBF".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just("\u{20ac}".as_bytes().to_vec()),
        Just(b"\xE2\x82".to_vec()),
        Just(b"\xFF".to_vec()),
        Just(b" ".to_vec()),
        "[a-z0-9 ]{0,8}".prop_map(String::into_bytes),
        "[a-z\u{e9}\u{20ac}]{60,90}".prop_map(String::into_bytes),
    ];
    prop_oneof![whole_line, part]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => proptest::collection::vec(piece(), 0..6).prop_map(|p| Op::Feed(p.concat())),
        1 => Just(Op::Reset),
        1 => "[0-9a-z]{0,3}".prop_map(Op::SetId),
    ]
}

fn limits() -> impl Strategy<Value = SseLimits> {
    prop_oneof![
        Just(SseLimits::default()),
        // Small event limits, that short values meet exactly as often as they pass them.
        (4usize..120, 1usize..32).prop_map(|(max_line_bytes, max_event_bytes)| SseLimits {
            max_line_bytes,
            max_event_bytes
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// After every step both parsers have yielded the same items, returned the same result and
    /// hold the same last event id.
    #[test]
    fn the_parser_yields_what_the_reference_yields(
        ops in proptest::collection::vec(op(), 0..24),
        limits in limits(),
    ) {
        let mut parser = SseParser::new(limits);
        let mut reference = Reference::new(limits);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for op in &ops {
            match op {
                Op::Feed(chunk) => {
                    let fed = parser.feed(chunk, &mut got);
                    prop_assert_eq!(fed, reference.feed(chunk, &mut want));
                }
                Op::Reset => {
                    parser.reset_stream();
                    reference.reset_stream();
                }
                Op::SetId(id) => {
                    parser.set_last_event_id(id.clone());
                    reference.set_last_event_id(id.clone());
                }
            }
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(parser.last_event_id(), reference.last_event_id.as_str());
        }
    }

    /// A parser given back a buffer after every event (`reuse_data`, holding text of its own
    /// and room to spare) yields what the reference yields.
    #[test]
    fn a_parser_given_back_its_data_buffers_yields_what_the_reference_yields(
        ops in proptest::collection::vec(op(), 0..24),
        limits in limits(),
    ) {
        let mut parser = SseParser::new(limits);
        let mut reference = Reference::new(limits);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for op in &ops {
            match op {
                Op::Feed(chunk) => {
                    let before = got.len();
                    let fed = parser.feed(chunk, &mut got);
                    prop_assert_eq!(fed, reference.feed(chunk, &mut want));
                    for item in &got[before..] {
                        if let SseItem::Event(event) = item {
                            let mut spare = String::with_capacity(2 * event.data.len() + 16);
                            spare.push_str("left over: ");
                            spare.push_str(&event.data);
                            parser.reuse_data(spare);
                        }
                    }
                }
                Op::Reset => {
                    parser.reset_stream();
                    reference.reset_stream();
                }
                Op::SetId(id) => {
                    parser.set_last_event_id(id.clone());
                    reference.set_last_event_id(id.clone());
                }
            }
            prop_assert_eq!(&got, &want);
        }
    }
}
