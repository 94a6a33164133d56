//! An event envelope read in one pass over its bytes, for the common case: its top-level
//! keys compared as bytes, the fields the bridge keeps read as their loose types read them,
//! every other value skipped (and checked to be JSON), and the payload scanned as it is
//! kept ([`Payload::as_written_fields_leading`]) in the same pass. Anything else gives up,
//! and the envelope is read with serde (`BbEvent::parse_serde`), so that every result is the
//! one that read gives.
//!
//! serde_json's derived read walks each of the engine's 13 fields through `next_key` and
//! `ignore_value` to keep five; this is most of an event's parse.
//!
//! The readers are functions of the text and a position that return the position after what
//! they read, rather than methods of a cursor: the position then stays in a register across
//! the envelope's loop, where a cursor passed by reference to the readers not inlined
//! (skipped containers, escaped strings, the payload) was stored and loaded around each.

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
    pub(super) payload: Option<Kept>,
}

/// A payload as the scan keeps it: its text, and where its [`TEXT_FIELDS`] are in it.
pub(super) type Kept = (Payload, [Field; 4]);

/// `data` read in one pass, or `None` when this scan does not decide it: a key written
/// with an escape or sent twice (of the fields read), a `type` written with an escape, a
/// number in a field read that is not a plain non-negative integer (of up to 19 digits), a
/// payload that is not an object or `null` or is not kept as text, a `\u` escape of a
/// surrogate or nesting deeper than 64 in a skipped value, text that is not JSON or not an
/// object. The serde read decides those.
///
/// Never inlined: inlined into the stream's task (a large future), the loop's position,
/// length and set of fields seen were kept on the stack, loaded and stored at each key.
#[inline(never)]
pub(super) fn envelope(data: &str) -> Option<Scanned<'_>> {
    if let Some(scanned) = in_layout(data) {
        return Some(scanned);
    }
    let b = data.as_bytes();
    let mut head = Head::default();
    // `timestamp` is read only when no `timestamp_ms` came (the engine sends both, the same
    // instant): its value is checked as it is passed, and read at the end if needed.
    let (mut timestamp_ms, mut timestamp_at) = (None, None);
    let mut payload = None;
    let mut seen = 0u8;
    let mut pos = whitespace(b, 0);
    if *b.get(pos)? != b'{' {
        return None;
    }
    pos = whitespace(b, pos + 1);
    if *b.get(pos)? == b'}' {
        pos += 1;
    } else {
        loop {
            let (key, after) = key(b, pos)?;
            pos = whitespace(b, colon(b, after)?);
            let field = field_index(key);
            if field != 0 {
                if seen & (1 << field) != 0 {
                    // serde refuses a field twice.
                    return None;
                }
                seen |= 1 << field;
            }
            pos = match field {
                // Most values skipped are strings: their end is found here, inline.
                0 if *b.get(pos)? == b'"' => string_end(b, pos)?,
                0 => skip(b, pos, 1)?,
                SEQ => {
                    let (seq, end) = uint(b, pos)?;
                    head.seq = seq;
                    end
                }
                TYPE => {
                    let (kind, end) = str_or_other(data, pos)?;
                    head.kind = kind;
                    end
                }
                TURN => {
                    let (turn, end) = uint(b, pos)?;
                    head.turn = turn.and_then(|u| i64::try_from(u).ok());
                    end
                }
                TIMESTAMP_MS => {
                    let (ms, end) = uint(b, pos)?;
                    timestamp_ms = Some(ms);
                    end
                }
                TIMESTAMP => {
                    timestamp_at = Some(pos);
                    uint_end(b, pos)?
                }
                // PAYLOAD, the one index left.
                _ => {
                    let (read, len) = read_payload(data, pos)?;
                    payload = read;
                    pos + len
                }
            };
            // A `,` or the closing `}`, right after the value in compact text.
            match *b.get(pos)? {
                b',' => pos += 1,
                b'}' => {
                    pos += 1;
                    break;
                }
                c if c <= b' ' => match spaced_after_value(b, pos)? {
                    (true, next) => pos = next,
                    (false, end) => {
                        pos = end;
                        break;
                    }
                },
                _ => return None,
            }
        }
    }
    if whitespace(b, pos) != b.len() {
        return None;
    }
    head.timestamp_ms = match (timestamp_ms, timestamp_at) {
        (Some(ms), _) => ms,
        (None, Some(at)) => uint(b, at)?.0,
        (None, None) => None,
    };
    Some(Scanned { head, payload })
}

/// [`envelope`] of an envelope written as the engine writes one: compact, its keys `id`,
/// `seq`, `type`, `session_id`, `turn`, `timestamp`, `timestamp_ms`, `protocol_version`,
/// `payload` in this order, then either nothing or `classification`, `family`, `actor`,
/// `visibility`. Each key is compared where the layout puts it, with the separator before
/// it and the `:` after it, and each value is read by the reader [`envelope`]'s loop reads it
/// with: the same result, without a key scanned or looked up. `None` for any other text (the
/// loop then reads it from its start).
#[inline(always)]
pub(super) fn in_layout(data: &str) -> Option<Scanned<'_>> {
    let b = data.as_bytes();
    let pos = other_end(b, literal(b, 0, b"{\"id\":")?)?;
    let (seq, pos) = uint(b, literal(b, pos, b",\"seq\":")?)?;
    let (kind, pos) = str_or_other(data, literal(b, pos, b",\"type\":")?)?;
    let pos = other_end(b, literal(b, pos, b",\"session_id\":")?)?;
    let (turn, pos) = uint(b, literal(b, pos, b",\"turn\":")?)?;
    let pos = uint_end(b, literal(b, pos, b",\"timestamp\":")?)?;
    let (timestamp_ms, pos) = uint(b, literal(b, pos, b",\"timestamp_ms\":")?)?;
    let pos = other_end(b, literal(b, pos, b",\"protocol_version\":")?)?;
    let pos = literal(b, pos, b",\"payload\":")?;
    let (payload, len) = read_payload(data, pos)?;
    let mut pos = pos + len;
    if b.get(pos) == Some(&b',') {
        pos = other_end(b, literal(b, pos, b",\"classification\":")?)?;
        pos = other_end(b, literal(b, pos, b",\"family\":")?)?;
        pos = actor_end(b, literal(b, pos, b",\"actor\":")?)?;
        pos = other_end(b, literal(b, pos, b",\"visibility\":")?)?;
    }
    if b.get(pos..)? != b"}" {
        return None;
    }
    let turn = turn.and_then(|u| i64::try_from(u).ok());
    Some(Scanned { head: Head { seq, kind, turn, timestamp_ms }, payload })
}

/// The position after `literal` when the text at `pos` starts with it: compared as an array
/// of its length (a word or two), not a byte at a time.
#[inline(always)]
fn literal<const N: usize>(b: &[u8], pos: usize, literal: &[u8; N]) -> Option<usize> {
    (b.get(pos..)?.first_chunk::<N>()? == literal).then_some(pos + N)
}

/// The position after the envelope's `actor` at `pos`, which the engine writes as
/// `{"kind":` and a string: read so without [`skip`]'s walk of an object, any other value
/// skipped.
#[inline(always)]
fn actor_end(b: &[u8], pos: usize) -> Option<usize> {
    if let Some(at) = literal(b, pos, b"{\"kind\":\"")
        && let Some(end) = string_end(b, at - 1)
        && b.get(end) == Some(&b'}')
    {
        return Some(end + 1);
    }
    other_end(b, pos)
}

/// The position after a value [`envelope`] does not read, at `pos`: a string ended inline,
/// anything else skipped.
#[inline(always)]
fn other_end(b: &[u8], pos: usize) -> Option<usize> {
    if *b.get(pos)? == b'"' { string_end(b, pos) } else { skip(b, pos, 1) }
}

/// The envelope's fields read, by their index in [`envelope`]'s set of fields seen (1 to
/// 6; 0 is a field not read).
const SEQ: u8 = 1;
const TYPE: u8 = 2;
const TURN: u8 = 3;
const TIMESTAMP_MS: u8 = 4;
const TIMESTAMP: u8 = 5;
const PAYLOAD: u8 = 6;

/// The index of the envelope's field named `key` ([`SEQ`] to [`PAYLOAD`]), 0 for a field not
/// read. Compared by length, then as words (`==` on a slice of a known length); a `match`
/// on byte-string patterns compares a byte at a time.
#[inline(always)]
fn field_index(key: &[u8]) -> u8 {
    match key.len() {
        3 if key == b"seq" => SEQ,
        4 if key == b"type" => TYPE,
        4 if key == b"turn" => TURN,
        12 if key == b"timestamp_ms" => TIMESTAMP_MS,
        9 if key == b"timestamp" => TIMESTAMP,
        7 if key == b"payload" => PAYLOAD,
        _ => 0,
    }
}

/// The position after the `:` that follows a key (whose closing quote is before `pos`),
/// and after whitespace before it: compact text has a `:` right there, one comparison.
#[inline(always)]
fn colon(b: &[u8], pos: usize) -> Option<usize> {
    match *b.get(pos)? {
        b':' => Some(pos + 1),
        c if c <= b' ' => spaced_colon(b, pos),
        _ => None,
    }
}

/// [`colon`] where whitespace comes first.
#[cold]
#[inline(never)]
fn spaced_colon(b: &[u8], pos: usize) -> Option<usize> {
    let pos = more_whitespace(b, pos);
    (*b.get(pos)? == b':').then_some(pos + 1)
}

/// After a value of the envelope and whitespace (at `pos`): `(true, the position after
/// it)` after a `,` (the next key, [`key`], passes over whitespace after it), `(false, the
/// position after it)` after the closing `}`.
#[cold]
#[inline(never)]
fn spaced_after_value(b: &[u8], pos: usize) -> Option<(bool, usize)> {
    let pos = more_whitespace(b, pos);
    match *b.get(pos)? {
        b',' => Some((true, pos + 1)),
        b'}' => Some((false, pos + 1)),
        _ => None,
    }
}

/// Whether `b` is whitespace between JSON tokens.
fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The position of the first byte from `pos` on that is not whitespace. Text written
/// compact has none, and costs one comparison here: every whitespace byte is at or below
/// `b' '`.
#[inline(always)]
fn whitespace(b: &[u8], pos: usize) -> usize {
    match b.get(pos) {
        Some(&c) if c <= b' ' => more_whitespace(b, pos),
        _ => pos,
    }
}

/// [`whitespace`] where there may be some.
#[cold]
#[inline(never)]
fn more_whitespace(b: &[u8], mut pos: usize) -> usize {
    while b.get(pos).copied().is_some_and(is_whitespace) {
        pos += 1;
    }
    pos
}

/// The key at `pos` (or after whitespace there), written without escapes: its bytes between
/// the quotes, and the position after its closing quote. A key with an escape or a control
/// character is not decided here.
#[inline(always)]
fn key(b: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    match *b.get(pos)? {
        b'"' => {}
        c if c <= b' ' => return spaced_key(b, pos),
        _ => return None,
    }
    let end = string_stop(b, pos + 1)?;
    if *b.get(end)? != b'"' {
        return None;
    }
    Some((b.get(pos + 1..end)?, end + 1))
}

/// [`key`] where whitespace comes first.
#[cold]
#[inline(never)]
fn spaced_key(b: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let pos = more_whitespace(b, pos);
    if *b.get(pos)? != b'"' {
        return None;
    }
    key(b, pos)
}

/// The position after the string that opens at `pos` (a `"`). `None` for a control
/// character, a bad escape, a `\u` of a surrogate (read by serde, which checks it where it
/// reads the string). A string without escapes (most) is read here; one with an escape by
/// [`escaped_end`].
#[inline(always)]
fn string_end(b: &[u8], pos: usize) -> Option<usize> {
    let end = string_stop(b, pos + 1)?;
    if *b.get(end)? == b'"' {
        return Some(end + 1);
    }
    escaped_end(b, end)
}

/// The position after the string whose first `\\` or control character is at `at`: as
/// [`string_end`].
#[inline(never)]
fn escaped_end(b: &[u8], mut at: usize) -> Option<usize> {
    loop {
        match *b.get(at)? {
            b'"' => return Some(at + 1),
            b'\\' => {}
            _ => return None,
        }
        match *b.get(at + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at += 2,
            b'u' => {
                let hex = b.get(at + 2..at + 6)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) || matches!(hex[0], b'd' | b'D') {
                    // Not hex, or maybe a surrogate (D800-DFFF, and D000-D7FF with them).
                    return None;
                }
                at += 6;
            }
            _ => return None,
        }
        at = string_stop(b, at)?;
    }
}

/// A value read as `LooseStr` reads it: a string without escapes, or `None` for any other
/// value (skipped); and the position after it. A string with an escape (or a control
/// character) is not decided here.
#[inline(always)]
fn str_or_other(data: &str, pos: usize) -> Option<(Option<&str>, usize)> {
    let b = data.as_bytes();
    if *b.get(pos)? != b'"' {
        return Some((None, skip(b, pos, 1)?));
    }
    let end = string_stop(b, pos + 1)?;
    if *b.get(end)? != b'"' {
        return None;
    }
    Some((Some(data.get(pos + 1..end)?), end + 1))
}

/// A value read as `LooseU64` reads it: a plain non-negative integer (up to 19 digits,
/// which all fit), or `None` for any value that is no number (skipped); and the position
/// after it. Other numbers are not read here.
#[inline(always)]
fn uint(b: &[u8], pos: usize) -> Option<(Option<u64>, usize)> {
    uint_as::<true>(b, pos)
}

/// The position after the value at `pos` where [`uint`] decides it (its value left unread),
/// `None` where it does not: the value can then be read by [`uint`] from `pos`.
#[inline(always)]
fn uint_end(b: &[u8], pos: usize) -> Option<usize> {
    Some(uint_as::<false>(b, pos)?.1)
}

/// [`uint`], its value worked out only when `VALUE` (else 0): the same decisions either way.
#[inline(always)]
fn uint_as<const VALUE: bool>(b: &[u8], pos: usize) -> Option<(Option<u64>, usize)> {
    let first = *b.get(pos)?;
    if !first.is_ascii_digit() {
        if first == b'-' {
            return None;
        }
        return Some((None, skip(b, pos, 1)?));
    }
    let (n, len) = leading_digits::<VALUE>(b, pos);
    let fraction = matches!(b.get(pos + len), Some(b'.' | b'e' | b'E'));
    if fraction || len > 19 || (first == b'0' && len > 1) {
        return None;
    }
    Some((Some(n), pos + len))
}

/// The digits from `pos` on: their count (at least 20 when there are 20 or more) and, when
/// there are at most 19 (which all fit) and `VALUE`, their value (else 0). Eight digits a step where eight bytes
/// are left (an envelope's timestamps have 13), then a byte at a time.
#[inline(always)]
fn leading_digits<const VALUE: bool>(b: &[u8], pos: usize) -> (u64, usize) {
    let (mut n, mut len) = (0u64, 0);
    while len < 20
        && let Some(word) = b.get(pos + len..).and_then(<[u8]>::first_chunk::<8>)
    {
        // The digits' values where the bytes are digits, with the first in the low byte.
        let word = u64::from_le_bytes(*word) ^ (ONES * u64::from(b'0'));
        let count = digit_count(word);
        if VALUE {
            // 19 digits fit; with a 20th the value is refused, whatever it wrapped to.
            n = n.wrapping_mul(POW10[count]).wrapping_add(first_digits(word, count));
        }
        len += count;
        if count < 8 {
            return (n, len);
        }
    }
    while len < 20
        && let Some(digit) = b.get(pos + len).map(|c| c.wrapping_sub(b'0')).filter(|d| *d <= 9)
    {
        if VALUE {
            n = n.wrapping_mul(10).wrapping_add(u64::from(digit));
        }
        len += 1;
    }
    (n, len)
}

/// A one in each byte of a word.
const ONES: u64 = 0x0101_0101_0101_0101;

/// `10^i`, for `i` digits more.
const POW10: [u64; 9] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

/// How many of the bytes of `word` (text XOR `b'0'` in each byte, the first in the low byte)
/// are digits before the first that is not: 0 to 8.
#[inline(always)]
fn digit_count(word: u64) -> usize {
    // A byte is a digit when it is at most 9 now: adding 0x76 sets the high bit of any byte
    // from 10 to 0x7f (without a carry), and a byte of 0x80 or more has it set already. A
    // carry out of such a byte can only mark a byte after it: the lowest mark is exact.
    let not_digit = (word.wrapping_add(ONES * 0x76) | word) & (ONES * 0x80);
    (not_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `count` (0 to 8) bytes of `word` as [`digit_count`] reads it,
/// each a digit, the first the most significant: the bytes after them shifted out, zeros
/// (leading) shifted in, and the eight digits added in pairs, fours and eights.
#[inline(always)]
fn first_digits(word: u64, count: usize) -> u64 {
    if count == 0 {
        return 0;
    }
    let word = word << (64 - 8 * count);
    // Each even byte: ten times its digit and the next one's.
    let pairs = word.wrapping_mul(10).wrapping_add(word >> 8);
    const MASK: u64 = 0x0000_00ff_0000_00ff;
    // Pairs 0 and 2 times 100 and 10^6, pairs 1 and 3 times 10^4 and 1, summed in the high
    // half.
    let high = (pairs & MASK)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((pairs >> 16) & MASK).wrapping_mul(1 + (10_000 << 32)));
    high >> 32
}

/// The payload at `pos`: an object kept as its tree is written, or `None` for `null`; and
/// its length in the text.
fn read_payload(data: &str, pos: usize) -> Option<(Option<Kept>, usize)> {
    match *data.as_bytes().get(pos)? {
        b'{' => {
            let (payload, found, len) =
                Payload::as_written_fields_leading(data.get(pos..)?, TEXT_FIELDS)?;
            Some((Some((payload, found)), len))
        }
        b'n' => word(data.as_bytes(), pos, b"null").map(|end| (None, end - pos)),
        _ => None,
    }
}

/// The position after `word` when the text at `pos` starts with it.
fn word(b: &[u8], pos: usize, word: &[u8]) -> Option<usize> {
    b.get(pos..)?.starts_with(word).then_some(pos + word.len())
}

/// The position after any JSON value at `pos`, nested `depth` deep, unread.
fn skip(b: &[u8], pos: usize, depth: usize) -> Option<usize> {
    match *b.get(pos)? {
        b'"' => string_end(b, pos),
        b'{' => nested(b, pos, depth, b'}', true),
        b'[' => nested(b, pos, depth, b']', false),
        b't' => word(b, pos, b"true"),
        b'f' => word(b, pos, b"false"),
        b'n' => word(b, pos, b"null"),
        _ => number(b, pos),
    }
}

/// The position after the object (`keyed`) or the array at `pos`, unread. A string value
/// (most) is ended inline, any other through [`skip`].
fn nested(b: &[u8], pos: usize, depth: usize, close: u8, keyed: bool) -> Option<usize> {
    if depth >= MAX_DEPTH {
        return None;
    }
    let mut pos = whitespace(b, pos + 1);
    if *b.get(pos)? == close {
        return Some(pos + 1);
    }
    loop {
        if keyed {
            pos = whitespace(b, pos);
            if *b.get(pos)? != b'"' {
                return None;
            }
            pos = colon(b, string_end(b, pos)?)?;
        }
        pos = whitespace(b, pos);
        pos = match *b.get(pos)? {
            b'"' => string_end(b, pos)?,
            _ => skip(b, pos, depth + 1)?,
        };
        pos = whitespace(b, pos);
        match *b.get(pos)? {
            b',' => pos += 1,
            c if c == close => return Some(pos + 1),
            _ => return None,
        }
    }
}

/// The position after the number at `pos`, as JSON writes one: `-`, an integer without a
/// leading zero, a fraction, an exponent.
fn number(b: &[u8], mut pos: usize) -> Option<usize> {
    if b.get(pos) == Some(&b'-') {
        pos += 1;
    }
    match *b.get(pos)? {
        b'0' => pos += 1,
        b'1'..=b'9' => pos = digits(b, pos),
        _ => return None,
    }
    if b.get(pos) == Some(&b'.') {
        pos = some_digits(b, pos + 1)?;
    }
    if matches!(b.get(pos), Some(b'e' | b'E')) {
        pos += 1;
        if matches!(b.get(pos), Some(b'+' | b'-')) {
            pos += 1;
        }
        pos = some_digits(b, pos)?;
    }
    Some(pos)
}

/// The position after the digits from `pos` on.
fn digits(b: &[u8], mut pos: usize) -> usize {
    while b.get(pos).is_some_and(u8::is_ascii_digit) {
        pos += 1;
    }
    pos
}

/// [`digits`], at least one.
fn some_digits(b: &[u8], pos: usize) -> Option<usize> {
    b.get(pos).filter(|c| c.is_ascii_digit())?;
    Some(digits(b, pos))
}
