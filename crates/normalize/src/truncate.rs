//! Preview truncation: large bodies keep their head and tail with a marker between, and the
//! full body stays reachable through a reference held in a [`BodyStore`].

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

/// Preview limit in bytes (UTF-8), marker included.
pub const PREVIEW_MAX_BYTES: usize = 8 * 1024;
/// Preview limit in lines, marker line included.
pub const PREVIEW_MAX_LINES: usize = 200;
/// Default memory budget of a [`BodyStore`].
pub const BODY_STORE_DEFAULT_BYTES: usize = 64 * 1024 * 1024;

/// Limits of a preview.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum bytes of the preview, marker included.
    pub max_bytes: usize,
    /// Maximum lines of the preview, marker line included.
    pub max_lines: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_bytes: PREVIEW_MAX_BYTES, max_lines: PREVIEW_MAX_LINES }
    }
}

/// A compact preview of a body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// The text to show: the whole body, or head + marker + tail.
    pub text: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Size of the full body in bytes.
    pub total_bytes: usize,
    /// Lines of the full body.
    pub total_lines: usize,
    /// Reference of the full body in the [`BodyStore`], when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_ref: Option<String>,
}

fn line_count(s: &str) -> usize {
    if s.is_empty() { 0 } else { s.lines().count() }
}

/// Cuts `body` to the limits without storing it. Returns the preview with `body_ref` unset;
/// `marker_ref` is the reference named inside the marker.
pub fn truncate(body: &str, limits: Limits, marker_ref: Option<&str>) -> Preview {
    let total_bytes = body.len();
    let total_lines = line_count(body);
    if total_bytes <= limits.max_bytes && total_lines <= limits.max_lines {
        return Preview {
            text: body.to_owned(),
            truncated: false,
            total_bytes,
            total_lines,
            body_ref: None,
        };
    }
    // Line budget: the marker takes one line; head gets the extra one when odd.
    let line_budget = limits.max_lines.saturating_sub(1);
    let head_lines = line_budget.div_ceil(2);
    let tail_lines = line_budget / 2;
    // Byte budget: reserve room for the marker (its digits are bounded by usize's width).
    let marker_reserve = 160 + marker_ref.map_or(0, str::len);
    let byte_budget = limits.max_bytes.saturating_sub(marker_reserve);
    let head_bytes = byte_budget.div_ceil(2);
    let tail_bytes = byte_budget / 2;

    // Head: first `head_lines` lines, then cut to `head_bytes`.
    let head_end = match head_lines {
        0 => 0,
        n => body.match_indices('\n').nth(n - 1).map_or(body.len(), |(i, _)| i + 1),
    };
    let head_end = body.floor_char_boundary(head_end.min(head_bytes));

    // Tail: last `tail_lines` lines, then cut to `tail_bytes`, never overlapping the head.
    let trimmed = body.strip_suffix('\n').unwrap_or(body);
    let mut tail_start = body.len();
    if tail_lines > 0 {
        tail_start = trimmed.rmatch_indices('\n').nth(tail_lines - 1).map_or(0, |(i, _)| i + 1);
    }
    let tail_start = body
        .ceil_char_boundary(tail_start.max(body.len().saturating_sub(tail_bytes)))
        .max(head_end);

    let head = &body[..head_end];
    let tail = &body[tail_start..];
    let omitted_bytes = tail_start - head_end;
    let omitted_lines =
        total_lines.saturating_sub(line_count(head)).saturating_sub(line_count(tail));
    let reference = marker_ref.map_or(String::new(), |r| format!("; full body: {r}"));
    let sep = if head.is_empty() || head.ends_with('\n') { "" } else { "\n" };
    let text = format!(
        "{head}{sep}… [truncated: {omitted_lines} lines, {omitted_bytes} bytes omitted{reference}] …\n{tail}"
    );
    Preview { text, truncated: true, total_bytes, total_lines, body_ref: None }
}

/// Full bodies of truncated previews, by reference. Bounded: past its byte budget the oldest
/// bodies are evicted (and counted); a lookup of an evicted reference gives `None`.
#[derive(Debug, Clone)]
pub struct BodyStore {
    bodies: BTreeMap<String, String>,
    order: VecDeque<String>,
    next: u64,
    bytes: usize,
    budget: usize,
    evicted: u64,
}

impl Default for BodyStore {
    fn default() -> Self {
        Self::with_budget(BODY_STORE_DEFAULT_BYTES)
    }
}

impl PartialEq for BodyStore {
    fn eq(&self, other: &Self) -> bool {
        self.bodies == other.bodies && self.next == other.next && self.evicted == other.evicted
    }
}

impl BodyStore {
    /// A store holding at most `budget` bytes of bodies.
    pub fn with_budget(budget: usize) -> Self {
        Self {
            bodies: BTreeMap::new(),
            order: VecDeque::new(),
            next: 0,
            bytes: 0,
            budget,
            evicted: 0,
        }
    }

    /// Makes a preview of `body`; when it is truncated, stores the full body and returns its
    /// reference in the preview.
    pub fn preview(&mut self, body: &str, limits: Limits) -> Preview {
        let probe = truncate(body, limits, None);
        if !probe.truncated {
            return probe;
        }
        self.next += 1;
        let reference = format!("text-{}", self.next);
        let mut preview = truncate(body, limits, Some(&reference));
        self.insert(reference.clone(), body.to_owned());
        preview.body_ref = Some(reference);
        preview
    }

    fn insert(&mut self, reference: String, body: String) {
        self.bytes += body.len();
        self.order.push_back(reference.clone());
        self.bodies.insert(reference, body);
        while self.bytes > self.budget {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(b) = self.bodies.remove(&old) {
                self.bytes -= b.len();
                self.evicted += 1;
            }
        }
    }

    /// The full body behind a reference, if still held.
    pub fn get(&self, reference: &str) -> Option<&str> {
        self.bodies.get(reference).map(String::as_str)
    }

    /// Bytes of bodies held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bodies evicted to stay within the budget.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }
}
