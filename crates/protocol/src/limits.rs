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
/// tolerant of malformed input (the parser reports that afterwards). String contents, most
/// of a message's bytes, are skipped with `memchr` up to the next quote or backslash.
pub(crate) fn nesting_depth_exceeds(raw: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'"' => {
                // Inside a string: find its closing quote, stepping over escapes.
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &raw[i..]) {
                        None => return false,
                        Some(at) if raw[i + at] == b'\\' => i += at + 2,
                        Some(at) => {
                            i += at + 1;
                            break;
                        }
                    }
                    if i >= raw.len() {
                        return false;
                    }
                }
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}
