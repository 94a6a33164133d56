//! Engine transports: the sans-IO SSE parser, and the HTTP clients and event streams of the
//! Kilo CLI server and the BreadBoard engine.
//!
//! IO contract: parsing is sans-IO; the clients do network IO through `reqwest`.

pub mod breadboard;
pub mod fake;
pub mod kilo;
pub mod sse;
pub mod transport;

#[cfg(test)]
mod tests;
