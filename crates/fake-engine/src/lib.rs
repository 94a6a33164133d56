//! A fake of the BreadBoard CLI-bridge engine: the `/v1` HTTP routes, the error envelope,
//! per-session event rings with the engine's resume rules, and SSE framed byte for byte like
//! the engine's, with turns played from the upstream replay format and injected faults
//! (dropped events, shrunken ring, cut connections, stalls, latency).
//!
//! IO contract: serves HTTP on a loopback listener and reads/writes the session workspace;
//! everything it publishes is built from scripts and requests, never from a model.

mod config;
mod engine;
mod error;
mod files;
mod ring;
mod routes;
mod runner;
mod script;
mod session;
mod sse;
mod util;

pub use config::{DecisionFault, EngineConfig, Faults, ScriptSource};
pub use engine::{FakeEngine, RunningEngine, StreamRequest};
pub use files::{contain, snippet};
pub use ring::{Ring, StoredEvent, WindowExceeded, ascii_escape};
pub use script::{EVENT_TYPES, Script, ScriptError, ScriptLine, is_known_type};
pub use session::Status;
pub use util::{iso_utc, uuid4};

#[cfg(test)]
mod tests;
