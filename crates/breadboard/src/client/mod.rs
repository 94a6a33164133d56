//! The BreadBoard engine client: REST routes of the CLI bridge, and the resumable,
//! gap-detecting event stream of a session with its persisted resume cursor.

mod cursor;
mod error;
mod kind;
mod rest;
mod scan;
mod store;
mod stream;
mod wire;

pub use cursor::{Admission, GapReason, ResumeCursor};
pub use error::BbError;
pub use rest::{BreadboardClient, PermissionDecision, PermissionRule, ReadMode};
pub use store::{CursorStore, StoreError, write_atomic};
pub use stream::{SessionStream, StreamOptions, StreamUpdate};
pub use wire::{
    Attachment, BbEvent, CommandAccepted, CreateSession, CreatedSession, EventDecodeError,
    FileContent, FileEntry, Health, SessionSummary, SnippetOptions,
};

/// A map keyed by session id that is looked up for every event: hashed with foldhash, as the
/// host's own session map is, where std's SipHash cost two look-ups ~330 instructions per
/// BreadBoard event. The ids come from the engine, and the hasher's seed is still random per
/// process.
pub(crate) type BySession<V> = std::collections::HashMap<String, V, foldhash::fast::RandomState>;
