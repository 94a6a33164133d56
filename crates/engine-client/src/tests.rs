//! Unit tests: the SSE parser against the fixture vectors and a re-chunking property; the
//! reconnecting client and the Kilo router against the fake transport.

mod breadboard;
mod kilo_router;
mod kilo_sync;
mod kilo_unrouted;
mod sse_client;
mod sse_vectors;
mod transport;
