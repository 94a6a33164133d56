//! SSE parser throughput.
fn main() {}
