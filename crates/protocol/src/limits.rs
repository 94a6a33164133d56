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
/// bytes at a time: masks of the bytes that matter (quotes, backslashes, brackets) are made
/// for the block at once, and the block is taken whole from them where that is exact (the
/// usual case: see [`Scan::whole`]); else only those bytes are visited. On a CPU with AVX2
/// and POPCNT (checked once, at run time) the masks are made 32 bytes at a time and the
/// bits counted in one instruction; the result is the same.
pub(crate) fn nesting_depth_exceeds(raw: &[u8], max: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt")
    {
        // SAFETY: the CPU has the features the function is built for (checked just above).
        return unsafe { exceeds_avx2(raw, max) };
    }
    exceeds_with(raw, max, Masks::of)
}

/// [`nesting_depth_exceeds`] built for AVX2 and POPCNT.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn exceeds_avx2(raw: &[u8], max: usize) -> bool {
    // The closure has this function's features: the call needs no `unsafe`.
    exceeds_with(raw, max, |bytes| Masks::of_avx2(bytes))
}

/// [`nesting_depth_exceeds`] with the block masks `masks` makes (the same masks on every
/// CPU; inlined into its callers, so that it is built with their CPU features).
#[inline(always)]
pub(crate) fn exceeds_with(raw: &[u8], max: usize, masks: impl Fn(&[u8; BLOCK]) -> Masks) -> bool {
    let mut scan = Scan::default();
    let (blocks, rest) = raw.as_chunks::<BLOCK>();
    for block in blocks {
        if scan.block(block, masks(block), max) {
            return true;
        }
    }
    // The rest, padded with spaces (which matter nowhere).
    let mut bytes = [b' '; BLOCK];
    bytes[..rest.len()].copy_from_slice(rest);
    scan.block(&bytes, masks(&bytes), max)
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
    /// One block and its masks; whether the nesting went deeper than `max` in it.
    #[inline(always)]
    fn block(&mut self, bytes: &[u8; BLOCK], masks: Masks, max: usize) -> bool {
        if self.whole(&masks, max) {
            return false;
        }
        self.walk(bytes, masks.any(), max)
    }

    /// Takes the block at once from its masks when that gives what [`Scan::walk`] would:
    /// when every backslash in it is inside a string (then escapes are found as runs of
    /// backslashes, the strings as the quotes they leave, and the brackets outside them
    /// counted) and its brackets can neither go deeper than `max` nor close below depth 0.
    /// Returns whether it took it; if not, nothing changed and the block is to be walked.
    #[inline(always)]
    fn whole(&mut self, m: &Masks, max: usize) -> bool {
        let (escaped, carry) = escaped_bytes(m.backslash, self.escaped);
        let mut inside = prefix_xor(m.quote & !escaped);
        if self.in_string {
            inside = !inside;
        }
        let (opened, closed) = (m.open & !inside, m.close & !inside);
        let (opened, closed) = (opened.count_ones() as usize, closed.count_ones() as usize);
        if m.backslash & !inside != 0 || self.depth + opened > max || self.depth < closed {
            return false;
        }
        self.depth = self.depth + opened - closed;
        self.in_string = inside >> 63 == 1;
        self.escaped = carry;
        true
    }

    /// The block byte by byte, visiting only the bytes `visit` marks (all that matter).
    fn walk(&mut self, bytes: &[u8; BLOCK], mut visit: u64, max: usize) -> bool {
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

/// The [`Masks`] of a block, `$width` bytes compared at once with the intrinsics the caller
/// names `Vector`, `load`, `set1`, `or`, `cmpeq` and `movemask` (SSE2's or AVX2's: the same
/// operations at two widths); `$bits`: the unsigned type of one lane's movemask.
#[cfg(target_arch = "x86_64")]
macro_rules! lanes {
    ($bytes:expr, $width:literal, $bits:ty) => {{
        // `[` and `]` become `{` and `}` with bit 5 set (no other byte does).
        let (quote, backslash, open, close, bit5) =
            (set1(b'"' as i8), set1(b'\\' as i8), set1(b'{' as i8), set1(b'}' as i8), set1(0x20));
        let mut m = Masks::default();
        for (i, lane) in $bytes.chunks_exact($width).enumerate() {
            // SAFETY: `lane` is `$width` readable bytes; the load has no alignment requirement.
            let v = unsafe { load(lane.as_ptr().cast::<Vector>()) };
            let folded = or(v, bit5);
            // A lane's mask (the movemask's high bits beyond the lane are zero), placed at
            // the lane's bytes.
            let at = $width * i;
            m.quote |= u64::from(movemask(cmpeq(v, quote)) as $bits) << at;
            m.backslash |= u64::from(movemask(cmpeq(v, backslash)) as $bits) << at;
            m.open |= u64::from(movemask(cmpeq(folded, open)) as $bits) << at;
            m.close |= u64::from(movemask(cmpeq(folded, close)) as $bits) << at;
        }
        m
    }};
}

/// The bytes of a block that matter to the nesting scan, one bit each, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Masks {
    pub(crate) quote: u64,
    pub(crate) backslash: u64,
    /// `[` and `{`.
    pub(crate) open: u64,
    /// `]` and `}`.
    pub(crate) close: u64,
}

impl Masks {
    /// Every byte that matters.
    fn any(&self) -> u64 {
        self.quote | self.backslash | self.open | self.close
    }

    /// The masks of `bytes`.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    pub(crate) fn of(bytes: &[u8; BLOCK]) -> Self {
        // SAFETY: the build enables SSE2 (the `cfg` above; every x86_64 CPU has it).
        unsafe { Self::of_sse2(bytes) }
    }

    /// [`Masks::of`], 16 bytes compared at once.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[target_feature(enable = "sse2")]
    fn of_sse2(bytes: &[u8; BLOCK]) -> Self {
        use std::arch::x86_64::{
            __m128i as Vector, _mm_cmpeq_epi8 as cmpeq, _mm_loadu_si128 as load,
            _mm_movemask_epi8 as movemask, _mm_or_si128 as or, _mm_set1_epi8 as set1,
        };
        lanes!(bytes, 16, u16)
    }

    /// [`Masks::of`], 32 bytes compared at once.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub(crate) fn of_avx2(bytes: &[u8; BLOCK]) -> Self {
        use std::arch::x86_64::{
            __m256i as Vector, _mm256_cmpeq_epi8 as cmpeq, _mm256_loadu_si256 as load,
            _mm256_movemask_epi8 as movemask, _mm256_or_si256 as or, _mm256_set1_epi8 as set1,
        };
        lanes!(bytes, 32, u32)
    }

    /// [`Masks::of`] where no vector version is written.
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    pub(crate) fn of(bytes: &[u8; BLOCK]) -> Self {
        Self::bytewise(bytes)
    }

    /// [`Masks::of`] a byte at a time (also the reference the vector version is tested
    /// against).
    #[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
    pub(crate) fn bytewise(bytes: &[u8; BLOCK]) -> Self {
        let mut m = Self::default();
        for (i, &b) in bytes.iter().enumerate() {
            let bit = 1u64 << i;
            match b {
                b'"' => m.quote |= bit,
                b'\\' => m.backslash |= bit,
                b'[' | b'{' => m.open |= bit,
                b']' | b'}' => m.close |= bit,
                _ => {}
            }
        }
        m
    }
}

/// The bytes a backslash escapes, reading every backslash of a block as one (the bytes after
/// odd runs of backslashes), and whether the block's last byte escapes the next block's
/// first; `carried`: the block's first byte is escaped. The branch-free way simdjson finds
/// them: a run starting on an odd bit is carried into by an addition, which flips which
/// bits of the run escape.
#[inline(always)]
fn escaped_bytes(backslash: u64, carried: bool) -> (u64, bool) {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let carried = u64::from(carried);
    let backslash = backslash & !carried;
    let follows = (backslash << 1) | carried;
    let odd_starts = backslash & !EVEN & !follows;
    let (even_starts, carry) = odd_starts.overflowing_add(backslash);
    ((EVEN ^ (even_starts << 1)) & follows, carry)
}

/// Bit `i` of the result: the parity of bits `0..=i` of `x` (inside a string, where `x`
/// marks its quotes).
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}
