//! Size and nesting limits applied to a raw message before it is parsed.

use crate::reject::{RejectCode, Rejection};

/// Default largest message accepted, in bytes (1 MiB).
pub const DEFAULT_MAX_BYTES: usize = 1024 * 1024;

/// Default deepest nesting of arrays/objects accepted. Below serde_json's own recursion limit
/// (128), so this check always decides first and the parser never recurses deeper.
pub const DEFAULT_MAX_DEPTH: usize = 100;

/// Limits applied to every message, inbound and outbound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest raw message, in bytes; longer messages are `payload_too_large`.
    pub max_bytes: usize,
    /// Deepest nesting of arrays and objects; deeper messages are `invalid_json`.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_bytes: DEFAULT_MAX_BYTES, max_depth: DEFAULT_MAX_DEPTH }
    }
}

impl Limits {
    /// Default limits with another byte limit.
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        Limits { max_bytes, ..Limits::default() }
    }

    /// Checks the byte length, then scans the nesting depth without recursion.
    pub(crate) fn precheck(&self, raw: &[u8]) -> Result<(), Rejection> {
        if raw.len() > self.max_bytes {
            return Err(Rejection::too_large(raw.len() as u64, self.max_bytes));
        }
        if self.depth_exceeded(raw) {
            return Err(Rejection::new(
                RejectCode::InvalidJson,
                format!(
                    "nesting deeper than {} levels (the maxDepth limit); send flatter params",
                    self.max_depth
                ),
            ));
        }
        Ok(())
    }

    /// Whether `raw` nests arrays/objects deeper than [`Limits::max_depth`] (the check behind
    /// a nesting `invalid_json`), so a bridge can name the limit in its answer.
    pub fn depth_exceeded(&self, raw: &[u8]) -> bool {
        nesting_depth_exceeds(raw, self.max_depth)
    }
}

/// Whether `[`/`{` nesting outside string literals goes deeper than `max`. Iterative, linear,
/// tolerant of malformed input (the parser reports that afterwards). The text is read 64
/// bytes at a time: a mask of the bytes that matter (quotes, backslashes, brackets) is made
/// for the block at once, and only those bytes are visited.
pub(crate) fn nesting_depth_exceeds(raw: &[u8], max: usize) -> bool {
    let mut scan = Scan::default();
    let (blocks, rest) = raw.as_chunks::<BLOCK>();
    for block in blocks {
        if scan.block(block, max) {
            return true;
        }
    }
    // The rest, padded with spaces (which matter nowhere).
    let mut bytes = [b' '; BLOCK];
    bytes[..rest.len()].copy_from_slice(rest);
    scan.block(&bytes, max)
}

const BLOCK: usize = 64;

/// Where [`nesting_depth_exceeds`] is between blocks.
#[derive(Default)]
struct Scan {
    depth: usize,
    in_string: bool,
    /// The block's first byte is escaped (the last one of the previous block was a
    /// backslash inside a string).
    escaped: bool,
}

impl Scan {
    /// One block; whether the nesting went deeper than `max` in it.
    fn block(&mut self, bytes: &[u8; BLOCK], max: usize) -> bool {
        let mut visit = mattering(bytes);
        if std::mem::take(&mut self.escaped) {
            visit &= !1;
        }
        while visit != 0 {
            let i = visit.trailing_zeros() as usize;
            visit &= visit - 1;
            match (self.in_string, bytes[i]) {
                // An escape: the next byte is its, whatever it is.
                (true, b'\\') if i + 1 == BLOCK => self.escaped = true,
                (true, b'\\') => visit &= !(1 << (i + 1)),
                (true, b'"') => self.in_string = false,
                (false, b'"') => self.in_string = true,
                (false, b'[' | b'{') => {
                    self.depth += 1;
                    if self.depth > max {
                        return true;
                    }
                }
                (false, b']' | b'}') => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
        false
    }
}

/// The bytes of `bytes` that matter to the nesting scan (quotes, backslashes, brackets), one
/// bit each.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) fn mattering(bytes: &[u8; BLOCK]) -> u64 {
    // SAFETY: the build enables SSE2 (the `cfg` above; every x86_64 CPU has it).
    unsafe { mattering_sse2(bytes) }
}

/// [`mattering`], 16 bytes compared at once.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn mattering_sse2(bytes: &[u8; BLOCK]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // `[`, `\\`, `]` become `{`, `|`, `}` with bit 5 set (a `|` is visited and does nothing).
    let (quote, open, bar, close, bit5) = (
        _mm_set1_epi8(b'"' as i8),
        _mm_set1_epi8(b'{' as i8),
        _mm_set1_epi8(b'|' as i8),
        _mm_set1_epi8(b'}' as i8),
        _mm_set1_epi8(0x20),
    );
    let mut mask = 0u64;
    for (i, lane) in bytes.chunks_exact(16).enumerate() {
        // SAFETY: `lane` is 16 readable bytes; the load has no alignment requirement.
        let v = unsafe { _mm_loadu_si128(lane.as_ptr().cast::<__m128i>()) };
        let folded = _mm_or_si128(v, bit5);
        let hits = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(folded, open)),
            _mm_or_si128(_mm_cmpeq_epi8(folded, bar), _mm_cmpeq_epi8(folded, close)),
        );
        // The mask is 16 bits (the high half of the `i32` is zero).
        let bits = u64::from(_mm_movemask_epi8(hits) as u16);
        mask |= bits << (16 * i);
    }
    mask
}

/// [`mattering`] where no vector version is written.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
pub(crate) fn mattering(bytes: &[u8; BLOCK]) -> u64 {
    mattering_bytewise(bytes)
}

/// [`mattering`] a byte at a time (also the reference the vector version is tested against).
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
pub(crate) fn mattering_bytewise(bytes: &[u8; BLOCK]) -> u64 {
    bytes.iter().enumerate().fold(0u64, |mask, (i, &b)| {
        let matters = b == b'"' || (b | 0x20).wrapping_sub(b'{') < 3;
        mask | (u64::from(matters) << i)
    })
}
