//! Server-sent events: the sans-IO parser and the reconnecting client built on it.

mod parser;

pub use parser::{SseError, SseEvent, SseItem, SseLimits, SseParser};
