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
