//! Whether a JSON text is byte for byte what serde_json writes for its value (compact, its
//! own escapes, its number forms), and that text when only whitespace, escapes or number
//! forms differ: a payload kept as such text goes out exactly as its tree would have. The
//! same scan can say where some top-level string fields are in that text ([`canonical_fields`]),
//! so a reader of those fields needs no second pass.

use std::ops::Range;

/// Deepest nesting checked here (serde_json refuses 128 levels; an envelope adds one).
const MAX_DEPTH: usize = 100;
/// Most keys of one object checked here for a key sent twice.
const MAX_KEYS: usize = 32;
/// Keys of one object kept without an allocation while it is checked.
const FEW_KEYS: usize = 8;

/// How a JSON text compares with serde_json's writing of its value ([`canonical`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Canonical {
    /// It is that writing.
    Same,
    /// It is not, and this is (whitespace dropped; string escapes and numbers written as
    /// serde_json writes them).
    Rewritten(String),
    /// Not decided here: read it as a tree. A key sent twice, a key with an escape, an
    /// object of more than 32 keys, nesting deeper than 100 levels, a lone surrogate, text
    /// that is not JSON.
    Tree,
}

/// A top-level field of an object as [`canonical_fields`] found it in the text serde_json
/// writes for it (the text itself when [`Canonical::Same`], else the rewritten text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// Absent, or not a string (a typed read of it as a string finds nothing).
    Absent,
    /// A string without escapes: its text between the quotes, which is its value.
    At(Range<usize>),
    /// A string written with an escape: its value is not its text (a reader unescapes it).
    Escaped,
}

/// How `text` (JSON) compares with serde_json's writing of its value: a scan, no
/// allocation unless it must be rewritten.
pub fn canonical(text: &str) -> Canonical {
    canonical_fields(text, []).0
}

/// [`canonical`], and in the same scan, when `text` is an object, where its top-level fields
/// named `keys` are in the text that [`Canonical`] says is written (`text` itself, or the
/// rewritten text); each [`Field::Absent`] when the text is not an object or is
/// [`Canonical::Tree`].
pub fn canonical_fields<const N: usize>(text: &str, keys: [&str; N]) -> (Canonical, [Field; N]) {
    if let Some((found, len)) = flat(text, keys)
        && len == text.len()
    {
        return (Canonical::Same, found);
    }
    let mut walk = Walk::new(text, keys);
    if walk.value(0).is_none() {
        return (Canonical::Tree, absent());
    }
    walk.whitespace();
    if walk.pos != text.len() {
        return (Canonical::Tree, absent());
    }
    walk.finish()
}

/// [`canonical_fields`] of the JSON value `text` starts with, and the value's length:
/// whatever follows it is left unread (and is no part of the writing), for a reader that
/// scans the text around the value itself (an envelope's one pass over its fields). The
/// length is 0 when [`Canonical::Tree`].
pub(crate) fn leading_fields<const N: usize>(
    text: &str,
    keys: [&str; N],
) -> (Canonical, [Field; N], usize) {
    match flat(text, keys) {
        Some((found, len)) => (Canonical::Same, found, len),
        None => walk_leading_fields(text, keys),
    }
}

/// [`leading_fields`] by the general walk alone.
pub(crate) fn walk_leading_fields<const N: usize>(
    text: &str,
    keys: [&str; N],
) -> (Canonical, [Field; N], usize) {
    let mut walk = Walk::new(text, keys);
    if walk.value(0).is_none() {
        return (Canonical::Tree, absent(), 0);
    }
    let len = walk.pos;
    let (canonical, found) = walk.finish();
    (canonical, found, len)
}

/// [`leading_fields`] of the commonest payload, a flat object written as serde_json writes
/// it, found without the general walk: `{` at the start, then up to 8 keys (none twice), each
/// a string without escapes, and values that are strings whose escapes serde_json writes as
/// they are ([`plain_escapes_end`]), integers as serde_json writes them (up to 18 digits),
/// `true`, `false` or `null`, without whitespace.
/// Such an object is its own writing ([`Canonical::Same`]); the fields found, and the
/// object's length. `None` for anything else: the walk decides it. An event's payload on a
/// stream (a delta's ids, its text and its `seq`) is such an object, and the walk's
/// rewriting, nesting and key bookkeeping cost several times this read of it.
#[inline]
pub(crate) fn flat<const N: usize>(text: &str, keys: [&str; N]) -> Option<([Field; N], usize)> {
    let b = text.as_bytes();
    if *b.first()? != b'{' {
        return None;
    }
    let mut found = absent();
    if *b.get(1)? == b'}' {
        return Some((found, 2));
    }
    // The keys read so far, to find one sent twice: a bit for each key length seen (keys of
    // other lengths differ: most keys are compared with none), and where each key is.
    let mut lengths = 0u64;
    let mut seen = [(0, 0); FEW_KEYS];
    let mut pos = 1;
    for n in 0..FEW_KEYS {
        if *b.get(pos)? != b'"' {
            return None;
        }
        let end = string_stop(b, pos + 1)?;
        if *b.get(end)? != b'"' || *b.get(end + 1)? != b':' {
            return None;
        }
        let key = b.get(pos + 1..end)?;
        let length = 1 << key.len().min(63);
        if lengths & length != 0
            && seen[..n].iter().any(|&(at, len)| b.get(at..at + len) == Some(key))
        {
            return None;
        }
        lengths |= length;
        seen[n] = (pos + 1, key.len());
        pos = end + 2;
        match *b.get(pos)? {
            b'"' => {
                let start = pos + 1;
                let end = string_stop(b, start)?;
                let field = if *b.get(end)? == b'"' {
                    pos = end + 1;
                    Field::At(start..end)
                } else {
                    pos = plain_escapes_end(b, end)? + 1;
                    Field::Escaped
                };
                if let Some(i) = keys.iter().position(|k| k.as_bytes() == key) {
                    found[i] = field;
                }
            }
            b't' => pos = flat_word(b, pos, b"true")?,
            b'f' => pos = flat_word(b, pos, b"false")?,
            b'n' => pos = flat_word(b, pos, b"null")?,
            _ => pos = plain_integer(b, pos)?,
        }
        match *b.get(pos)? {
            b',' => pos += 1,
            b'}' => return Some((found, pos + 1)),
            _ => return None,
        }
    }
    None
}

/// Where the closing quote is of the string whose first `\\` or control character is at
/// `at`, when each of its escapes is one serde_json writes as it is (`\"`, `\\`, `\b`, `\f`,
/// `\n`, `\r`, `\t`: most deltas hold a line break). `None` for any other (`\/`, a `\u`
/// escape) and for a raw control character: the walk decides those.
#[inline(never)]
fn plain_escapes_end(b: &[u8], mut at: usize) -> Option<usize> {
    loop {
        match *b.get(at)? {
            b'"' => return Some(at),
            b'\\' => {}
            _ => return None,
        }
        match *b.get(at + 1)? {
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => at = string_stop(b, at + 2)?,
            _ => return None,
        }
    }
}

/// The position after `word` when the text at `pos` starts with it.
#[inline(always)]
fn flat_word(b: &[u8], pos: usize, word: &[u8]) -> Option<usize> {
    b.get(pos..)?.starts_with(word).then_some(pos + word.len())
}

/// The position after the integer at `pos` when it is one that serde_json reads and writes
/// as itself (as [`Walk::number`]'s plain tokens: up to 18 digits, no leading zero, not
/// `-0`). What follows it is the caller's to check: a fraction or an exponent is no `,` or
/// `}`.
#[inline(always)]
fn plain_integer(b: &[u8], pos: usize) -> Option<usize> {
    let start = pos + usize::from(b.get(pos) == Some(&b'-'));
    let mut end = start;
    while b.get(end).is_some_and(u8::is_ascii_digit) {
        end += 1;
    }
    let len = end - start;
    let zero = *b.get(start)? == b'0';
    (len > 0 && len <= 18 && !(zero && (len > 1 || start > pos))).then_some(end)
}

fn absent<const N: usize>() -> [Field; N] {
    std::array::from_fn(|_| Field::Absent)
}

/// A scan of `text`, writing into `out` (from the first difference on) what serde_json
/// would write; `None` from a step: not decided here.
struct Walk<'a, 'k, const N: usize> {
    text: &'a str,
    pos: usize,
    /// How much of `text` is accounted for in `out`.
    copied: usize,
    out: Option<String>,
    /// The top-level fields to find, and what was found of each.
    keys: [&'k str; N],
    found: [Field; N],
    /// Whether the last string scanned is written with an escape.
    escaped: bool,
}

impl<'a, 'k, const N: usize> Walk<'a, 'k, N> {
    fn new(text: &'a str, keys: [&'k str; N]) -> Self {
        Self { text, pos: 0, copied: 0, out: None, keys, found: absent(), escaped: false }
    }

    /// What the scan up to the current position decided.
    fn finish(self) -> (Canonical, [Field; N]) {
        let canonical = match self.out {
            None => Canonical::Same,
            Some(mut out) => {
                out.push_str(&self.text[self.copied..self.pos]);
                Canonical::Rewritten(out)
            }
        };
        (canonical, self.found)
    }

    /// Where `text`'s byte `at` (not before `copied`) is in what is written.
    fn written_at(&self, at: usize) -> usize {
        match &self.out {
            None => at,
            Some(out) => out.len() + at - self.copied,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// Writes `with` in place of the text from `from` to the current position.
    fn replace(&mut self, from: usize, with: &str) {
        let out = self.out.get_or_insert_with(|| String::with_capacity(self.text.len()));
        out.push_str(&self.text[self.copied..from]);
        out.push_str(with);
        self.copied = self.pos;
    }

    fn whitespace(&mut self) {
        let from = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
        if self.pos > from {
            self.replace(from, "");
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        self.whitespace();
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string(false).map(drop),
            b't' => self.word("true"),
            b'f' => self.word("false"),
            b'n' => self.word("null"),
            _ => self.number(),
        }
    }

    fn word(&mut self, word: &str) -> Option<()> {
        self.text[self.pos..].starts_with(word).then(|| self.pos += word.len())
    }

    /// After the value: `,` (another follows) or `close`.
    fn next_or_close(&mut self, close: u8) -> Option<bool> {
        self.whitespace();
        let b = self.peek()?;
        self.pos += 1;
        match b {
            b',' => Some(true),
            b if b == close => Some(false),
            _ => None,
        }
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        self.whitespace();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(());
        }
        // The keys read so far, to find one sent twice: the first few in an array (most
        // objects have no more; clearing room for all 32 cost 64 stores an object), the
        // rest in a `Vec`.
        let mut few = [""; FEW_KEYS];
        let mut more = Vec::new();
        let mut n = 0;
        loop {
            self.whitespace();
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string(true)?;
            if n == MAX_KEYS || few[..n.min(FEW_KEYS)].contains(&key) || more.contains(&key) {
                return None;
            }
            match few.get_mut(n) {
                Some(slot) => *slot = key,
                None => more.push(key),
            }
            n += 1;
            self.whitespace();
            if self.peek()? != b':' {
                return None;
            }
            self.pos += 1;
            match self.keys.iter().position(|k| *k == key).filter(|_| depth == 1) {
                Some(i) => self.found[i] = self.field(depth)?,
                None => self.value(depth)?,
            }
            if !self.next_or_close(b'}')? {
                return Some(());
            }
        }
    }

    /// A top-level field's value, and what a reader of it as a string finds.
    fn field(&mut self, depth: usize) -> Option<Field> {
        self.whitespace();
        if self.peek()? != b'"' {
            self.value(depth)?;
            return Some(Field::Absent);
        }
        let start = self.written_at(self.pos + 1);
        self.string(false)?;
        if self.escaped {
            return Some(Field::Escaped);
        }
        // No escape is written: the written text between the quotes is the value.
        Some(Field::At(start..self.written_at(self.pos - 1)))
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        self.whitespace();
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(());
        }
        loop {
            self.value(depth)?;
            if !self.next_or_close(b']')? {
                return Some(());
            }
        }
    }

    /// A string, its escapes rewritten where serde_json writes them otherwise; its text
    /// between the quotes. A key must have no escape (keys are compared as text). A string
    /// without escapes (most) is read here; one with an escape or a control character by
    /// [`Walk::escaped_string`].
    #[inline(always)]
    fn string(&mut self, key: bool) -> Option<&'a str> {
        let text = self.text;
        let start = self.pos + 1;
        self.escaped = false;
        let end = string_stop(text.as_bytes(), start)?;
        if text.as_bytes()[end] == b'"' {
            self.pos = end + 1;
            return text.get(start..end);
        }
        self.pos = end;
        self.escaped_string(start, key)
    }

    /// The rest of [`Walk::string`]'s string that opens at `start - 1`, from its first `\\`
    /// or control character (the current position) on.
    #[inline(never)]
    fn escaped_string(&mut self, start: usize, key: bool) -> Option<&'a str> {
        let text = self.text;
        loop {
            match text.as_bytes()[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Some(&text[start..self.pos - 1]);
                }
                // A control character is written escaped: this is not JSON.
                b if b < 0x20 => return None,
                _ => {}
            }
            if key {
                return None;
            }
            self.escape()?;
            self.pos = string_stop(text.as_bytes(), self.pos)?;
        }
    }

    /// The escape at the current position.
    fn escape(&mut self) -> Option<()> {
        let bytes = self.text.as_bytes();
        let from = self.pos;
        match *bytes.get(from + 1)? {
            b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => {
                self.pos += 2;
                self.escaped = true;
            }
            b'/' => {
                self.pos += 2;
                self.replace(from, "/");
            }
            b'u' => {
                let unit = hex4(bytes.get(from + 2..from + 6)?)?;
                self.pos = from + 6;
                let c = match unit {
                    0xD800..=0xDBFF => {
                        if bytes.get(self.pos..self.pos + 2)? != b"\\u" {
                            return None;
                        }
                        let low = hex4(bytes.get(self.pos + 2..self.pos + 6)?)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        self.pos += 6;
                        char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(unit)?,
                };
                let mut buf = [0u8; 6];
                let written = escaped(c, &mut buf);
                self.escaped |= written.starts_with('\\');
                if written != &self.text[from..self.pos] {
                    self.replace(from, written);
                }
            }
            _ => return None,
        }
        Some(())
    }

    fn number(&mut self) -> Option<()> {
        let from = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
            self.pos += 1;
        }
        let token = &self.text[from..self.pos];
        let digits = token.strip_prefix('-').unwrap_or(token);
        // An integer of up to 18 digits reads and writes as itself (but `-0`: a float).
        let plain = !digits.is_empty()
            && digits.len() <= 18
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (!digits.starts_with('0') || token == "0");
        if plain {
            return Some(());
        }
        let number: serde_json::Number = serde_json::from_str(token).ok()?;
        let mut buf = [0u8; 40];
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        serde_json::to_writer(&mut cursor, &number).ok()?;
        let len = usize::try_from(cursor.position()).ok()?;
        let written = std::str::from_utf8(buf.get(..len)?).ok()?;
        if written != token {
            self.replace(from, written);
        }
        Some(())
    }
}

/// Where the first byte of `bytes` from `at` on that ends a plain run of a JSON string is
/// (a position in `bytes`): a `"`, a `\\` or a control character (which a string holds only
/// escaped). Sixteen bytes a step (SSE2 on x86_64); when fewer than sixteen are left, the
/// last sixteen of `bytes` are compared as one more step, so that a string near the end of
/// a text is not read a byte at a time. Strings are most of what a scan of JSON text reads,
/// and most of an envelope's strings end within the first step. Always inlined: a call
/// costs about as much as the step (a scan that stopped inlining it read slower).
#[inline(always)]
pub fn string_stop(bytes: &[u8], mut at: usize) -> Option<usize> {
    while let Some(block) = bytes.get(at..).and_then(<[u8]>::first_chunk::<STEP>) {
        if let Some(i) = first_stop(block) {
            return Some(at + i);
        }
        at += STEP;
    }
    last_stop(bytes, at)
}

/// Bytes [`string_stop`] compares at once.
pub(crate) const STEP: usize = 16;

/// Whether `b` ends a plain run of a JSON string.
fn is_stop(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// Where the first byte of `block` that ends a plain run of a string is, if any.
#[inline(always)]
fn first_stop(block: &[u8; STEP]) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    return Some(stops_sse2(block)).filter(|&m| m != 0).map(|m| m.trailing_zeros() as usize);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    return first_stop_words(block);
}

/// [`string_stop`] of the fewer than sixteen bytes from `at` to the end of `bytes`: the
/// last sixteen bytes of `bytes` compared at once, those before `at` left out.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn last_stop(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = bytes.get(at..)?;
    let Some(last) = bytes.last_chunk::<STEP>() else {
        return rest.iter().position(|&b| is_stop(b)).map(|i| at + i);
    };
    // Fewer than STEP bytes are left: 1 to 16 of the last step's bytes lie before `at`.
    let before = STEP - rest.len();
    let mask = stops_sse2(last) >> before;
    (mask != 0).then(|| at + mask.trailing_zeros() as usize)
}

/// [`string_stop`] of the fewer than sixteen bytes from `at` to the end of `bytes`, a byte
/// at a time.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn last_stop(bytes: &[u8], at: usize) -> Option<usize> {
    bytes.get(at..)?.iter().position(|&b| is_stop(b)).map(|i| at + i)
}

/// The bytes of `block` that end a plain run of a string, as a bit each (bit `i` for
/// `block[i]`), sixteen bytes compared at once.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(crate) fn stops_sse2(block: &[u8; STEP]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: the build enables SSE2 (the `cfg` above; every x86_64 CPU has it), and `block`
    // is 16 readable bytes (the load has no alignment requirement).
    let mask = unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // Below 0x20: the unsigned maximum with 0x1f is 0x1f.
        let low = _mm_set1_epi8(0x1f);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
    };
    // The movemask sets the low 16 bits only.
    mask as u32
}

/// [`first_stop`] eight bytes a word, where no vector form is written (and in tests, held
/// to the same answers).
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
pub(crate) fn first_stop_words(block: &[u8; STEP]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    /// The bytes of `v` that are zero have their high bit set (and maybe bytes above the
    /// first such one: only the lowest is exact).
    fn zeros(v: u64) -> u64 {
        v.wrapping_sub(ONES) & !v & HIGH
    }
    let (words, _) = block.as_chunks::<8>();
    for (i, word) in words.iter().enumerate() {
        let v = u64::from_le_bytes(*word);
        // Below 0x20: the subtraction borrows into the high bit of a byte below 0x80.
        let control = v.wrapping_sub(ONES * 0x20) & !v & HIGH;
        let hits =
            zeros(v ^ (ONES * u64::from(b'"'))) | zeros(v ^ (ONES * u64::from(b'\\'))) | control;
        if hits != 0 {
            // The lowest flagged byte is a true hit of one of the three (a false one of
            // each lies above its first true one).
            return Some(8 * i + (hits.trailing_zeros() / 8) as usize);
        }
    }
    None
}

/// A `\u` escape's four hex digits.
fn hex4(digits: &[u8]) -> Option<u32> {
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    std::str::from_utf8(digits).ok().and_then(|d| u32::from_str_radix(d, 16).ok())
}

/// `c` in a string as serde_json writes it.
fn escaped(c: char, buf: &mut [u8; 6]) -> &str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '\u{8}' => "\\b",
        '\t' => "\\t",
        '\n' => "\\n",
        '\u{c}' => "\\f",
        '\r' => "\\r",
        c if u32::from(c) < 0x20 => {
            let b = u32::from(c) as usize;
            *buf = [b'\\', b'u', b'0', b'0', HEX[b >> 4], HEX[b & 0xf]];
            std::str::from_utf8(&buf[..]).unwrap_or_default()
        }
        c => c.encode_utf8(&mut buf[..]),
    }
}
