//! Server-sent events: the sans-IO parser and the reconnecting client built on it.

mod backoff;
mod client;
mod parser;

pub use backoff::{Jitter, NoJitter, RandomJitter, ReconnectPolicy};
pub use client::{DropReason, ResumeFrom, SseClient, SseClientError, SseClientEvent};
pub use parser::{SseError, SseEvent, SseItem, SseLimits, SseParser};
