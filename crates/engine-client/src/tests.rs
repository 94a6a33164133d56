//! Unit tests: the SSE parser against the fixture vectors and a re-chunking property.

mod sse_vectors;
