//! The async host service: one event loop per webview connection that drives the host core
//! against an engine adapter, the supervisor and a webview sink.
//!
//! IO contract: the only crate below the apps that owns tasks and channels; all IO goes
//! through the ports of `ARCHITECTURE.md`.
