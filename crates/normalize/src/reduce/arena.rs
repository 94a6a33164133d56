//! A transcript's strings in a few large buffers: the ids its user and text blocks carry
//! (message, event and prompt ids) and its Kilo part ids, each referenced by a [`TextRef`]
//! (offset and length) instead of a `String` of its own.

/// Most bytes of one chunk of the arena: a string never straddles two chunks.
const CHUNK: usize = 64 * 1024;

/// Where a string lives in a transcript's arena: its offset (chunk number × 64 KiB + its
/// offset in the chunk) and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextRef {
    at: u32,
    len: u32,
}

/// Strings appended to chunks: the first grows as a `String` does, up to 64 KiB (a short
/// session's ids cost their bytes, not a chunk); the next ones are allocated whole and never
/// move, so the arena grows without copying and keeps at most one chunk of spare room.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Arena {
    /// The chunks; a string longer than a chunk takes one `String` followed by empty ones for
    /// the chunk numbers it spans.
    chunks: Vec<String>,
    /// Bytes held for strings no block refers to any more (a user message's text replaced).
    garbage: usize,
}

impl Arena {
    /// Appends `s`. An arena past 4 GiB (u32 offsets) keeps the string out: it reads as
    /// empty (no session comes near: that is millions of messages' ids).
    pub(crate) fn push(&mut self, s: &str) -> TextRef {
        let Ok(len) = u32::try_from(s.len()) else { return TextRef::default() };
        if let [first] = self.chunks.as_mut_slice()
            && first.len() + s.len() <= CHUNK
        {
            // The first chunk grows by doubling, to 64 KiB at most.
            if first.capacity() - first.len() < s.len() {
                let want = (first.capacity() * 2).max(first.len() + s.len()).clamp(64, CHUNK);
                first.reserve_exact(want - first.len());
            }
        }
        let fits = self.chunks.last().is_some_and(|c| c.capacity() - c.len() >= s.len());
        if !fits {
            let first = self.chunks.len();
            let units = s.len().div_ceil(CHUNK).max(1);
            if (first + units) * CHUNK > u32::MAX as usize {
                return TextRef::default();
            }
            let size = if first == 0 { s.len().max(64) } else { units * CHUNK };
            self.chunks.push(String::with_capacity(size));
            self.chunks.extend(std::iter::repeat_n(String::new(), units - 1));
            if let Some(c) = self.chunks.get_mut(first) {
                c.push_str(s);
            }
            return TextRef { at: (first * CHUNK) as u32, len };
        }
        let n = self.chunks.len() - 1;
        let Some(c) = self.chunks.get_mut(n) else { return TextRef::default() };
        let at = n * CHUNK + c.len();
        c.push_str(s);
        TextRef { at: at as u32, len }
    }

    /// The string at `r` (empty where `r` is out of range, which no `push` returns).
    pub(crate) fn get(&self, r: TextRef) -> &str {
        let (n, off) = (r.at as usize / CHUNK, r.at as usize % CHUNK);
        self.chunks.get(n).and_then(|c| c.get(off..off + r.len as usize)).unwrap_or_default()
    }

    /// Notes that nothing refers to `r` any more. Returns whether the arena is then more
    /// than half garbage (time to [`compact`](Self::compact) it).
    pub(crate) fn release(&mut self, r: TextRef) -> bool {
        self.garbage += r.len as usize;
        let used: usize = self.chunks.iter().map(String::len).sum();
        self.garbage * 2 > used
    }

    /// A new arena holding what `refs` name, each moved to it (`refs` yields every reference
    /// still in use; one seen twice in a row is moved once).
    pub(crate) fn compact<'a>(&self, refs: impl Iterator<Item = &'a mut TextRef>) -> Arena {
        let mut new = Arena::default();
        let mut last: Option<(TextRef, TextRef)> = None;
        for r in refs {
            *r = match last {
                Some((old, moved)) if old == *r => moved,
                _ => {
                    let moved = new.push(self.get(*r));
                    last = Some((*r, moved));
                    moved
                }
            };
        }
        new
    }

    /// Bytes held (chunks' capacity).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.chunks.iter().map(String::capacity).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::{Arena, CHUNK};

    #[test]
    fn strings_read_back_across_chunks() {
        let mut arena = Arena::default();
        let small: Vec<String> = (0..20_000).map(|i| format!("msg_{i}")).collect();
        let big = "x".repeat(3 * CHUNK + 5);
        let mut refs = Vec::new();
        for (i, s) in small.iter().enumerate() {
            refs.push((arena.push(s), s.as_str()));
            if i == 7_000 {
                refs.push((arena.push(&big), big.as_str()));
            }
        }
        refs.push((arena.push(""), ""));
        for (r, s) in refs {
            assert_eq!(arena.get(r), s);
        }
    }

    #[test]
    fn a_short_session_holds_its_bytes_not_a_chunk() {
        let mut arena = Arena::default();
        arena.push("msg_user_1");
        arena.push("evt_1");
        assert!(arena.capacity() <= 64, "{}", arena.capacity());
        for i in 0..1_000 {
            arena.push(&format!("msg_{i:08}"));
        }
        // Past the first chunk's doubling, whole chunks: at most one of spare room.
        assert!(arena.capacity() < 12_000 * 2, "{}", arena.capacity());
    }
}
