//! The engine-neutral transport of every HTTP engine: the sans-IO SSE parser, the reconnecting
//! SSE client, the engine transport port with its HTTP implementation (the one place a
//! secret is exposed, to build an auth header) and an in-memory fake for fault injection, and
//! [`known_types!`], with which each engine crate holds the event types it knows without an
//! allocation.
//! Each engine's client (its routes, wire types and event router) lives in its own crate
//! (`bb-kilo`, `bb-breadboard`).
//!
//! IO contract: parsing is sans-IO; the transport does network IO through `reqwest`, and each
//! `http://` stream on a tokio `TcpStream` of its own (`transport::own_conn`).

pub mod fake;
pub mod kind;
pub mod sse;
pub mod transport;

#[cfg(test)]
mod tests;
