//! Fuzz target for the envelope decoders: the first byte picks the transport, the rest is one
//! raw message. Decoding must never panic, and an accepted message must pass the outbound
//! check and decode again to the same typed message. The id sniffer never panics, reads the
//! same id however the bytes are split, and agrees with the decoder on every v1 request it
//! accepts.
#![no_main]

use bb_protocol::{
    IdSniffer, Limits, MAX_SNIFFED_ID_BYTES, Message, Transport, V1Message, decode,
    sniff_request_id,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, raw)) = data.split_first() else { return };
    let transport = if selector & 1 == 0 { Transport::V1 } else { Transport::Ws };
    let limits = Limits::default();
    let sniffed = sniff_request_id(raw);
    let mut chunked = IdSniffer::new();
    let split = usize::from(selector).min(raw.len());
    chunked.push(&raw[..split]);
    chunked.push(&raw[split..]);
    assert_eq!(chunked.request_id(), sniffed);
    if let Ok(message) = decode(transport, raw, &limits) {
        if let Message::V1(V1Message::Request(req)) = &message
            // Escaped, a byte of the id takes at most 6 raw bytes (`\u00XX`).
            && req.id.len() * 6 <= MAX_SNIFFED_ID_BYTES
        {
            assert_eq!(sniffed.as_deref(), Some(req.id.as_str()), "the sniffer disagrees");
        }
        let line = match &message {
            Message::V1(m) => m.to_line(&limits),
            Message::Ws(m) => m.to_line(&limits),
        };
        let Ok(line) = line else { panic!("accepted message fails the outbound check") };
        assert_eq!(decode(transport, line.as_bytes(), &limits).ok(), Some(message));
    }
});
