//! Fuzz target for the envelope decoders: the first byte picks the transport, the rest is one
//! raw message. Decoding must never panic, and an accepted message must pass the outbound
//! check and decode again to the same typed message.
#![no_main]

use bb_protocol::{Limits, Message, Transport, decode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, raw)) = data.split_first() else { return };
    let transport = if selector & 1 == 0 { Transport::V1 } else { Transport::Ws };
    let limits = Limits::default();
    if let Ok(message) = decode(transport, raw, &limits) {
        let line = match &message {
            Message::V1(m) => m.to_line(&limits),
            Message::Ws(m) => m.to_line(&limits),
        };
        let Ok(line) = line else { panic!("accepted message fails the outbound check") };
        assert_eq!(decode(transport, line.as_bytes(), &limits).ok(), Some(message));
    }
});
