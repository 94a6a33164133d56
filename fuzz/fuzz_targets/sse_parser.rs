//! Fuzz target: the SSE parser on arbitrary bytes split at arbitrary points never panics,
//! and yields the same items whatever the split.
#![no_main]

use bb_engine_client::sse::{SseLimits, SseParser};
use libfuzzer_sys::fuzz_target;

fn run<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> (Vec<bb_engine_client::sse::SseItem>, bool) {
    let limits = SseLimits { max_line_bytes: 1024, max_event_bytes: 4096 };
    let mut parser = SseParser::new(limits);
    let mut out = Vec::new();
    for chunk in chunks {
        if parser.feed(chunk, &mut out).is_err() {
            return (out, true);
        }
    }
    (out, false)
}

fuzz_target!(|input: &[u8]| {
    // The first byte picks a chunk size, the rest is the stream.
    let Some((&size, stream)) = input.split_first() else { return };
    let size = usize::from(size).max(1);
    let whole = run([stream]);
    let chunked = run(stream.chunks(size));
    assert_eq!(whole, chunked);
    // Empty reads between chunks change nothing either.
    let with_empties = run(stream.chunks(size).flat_map(|c| [c, &[][..]]));
    assert_eq!(whole, with_empties);
});
