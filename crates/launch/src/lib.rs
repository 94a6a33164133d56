//! The engine side of every bridge binary: the engine flags (`--workspace`, `--engine`,
//! `--engine-bin`, `--engine-url`, `--engine-*-env`, `--state-dir`, …) and the code that turns
//! them into an engine adapter and, in spawn mode, its supervision; and the stop signals
//! (SIGTERM, SIGINT) both binaries obey. `bb-sidecar` and
//! `bb-gateway` both flatten [`EngineArgs`] into their command line, so they take the same
//! flags with the same defaults (the offline demo engine).
//!
//! IO contract: reads the environment variables the flags name and canonicalizes the
//! workspace; `--engine demo` starts the in-process fake engine on a loopback port. Engine
//! processes are spawned later, by the service, through the supervision built here.
//!
//! Also the allocator every bridge binary declares as its global one ([`Mimalloc`]).

mod alloc;
mod args;
mod launcher;
mod signal;

pub use alloc::Mimalloc;
pub use args::{EngineArgs, EngineKind};
pub use launcher::{EngineParts, LaunchError, Launcher};
pub use signal::terminate_signal;
