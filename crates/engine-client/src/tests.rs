//! Unit tests: the SSE parser against the fixture vectors and a re-chunking property; the
//! reconnecting client and the transport against the fake transport.

mod sse_client;
mod sse_vectors;
mod transport;
