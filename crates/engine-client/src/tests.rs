//! Unit tests: the SSE parser against the fixture vectors and a re-chunking property; the
//! reconnecting client against the fake transport; the HTTP transport's streams against a raw
//! TCP server.

mod sse_client;
mod sse_reference;
mod sse_vectors;
mod transport;
