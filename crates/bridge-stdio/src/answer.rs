//! The error response owed for a line the decoder refused: the rejection's stable code, a
//! message saying what to do, and `details` naming the limit that was hit.

use bb_protocol::v1::{V1Error, V1Response};
use bb_protocol::{Limits, RejectCode, Rejection, sniff_request_id};
use serde_json::json;

/// What a refused line was, as far as the bridge knows.
pub(crate) enum Refused<'a> {
    /// A line within the cap, held whole.
    Held(&'a [u8]),
    /// A line over the cap, measured but not held.
    TooLong(u64),
}

/// The rejection with the request id read from the raw bytes when the decoder read none.
pub(crate) fn with_sniffed_id(rejection: Rejection, raw: &[u8]) -> Rejection {
    if rejection.id.is_some() {
        return rejection;
    }
    rejection.answering(sniff_request_id(raw))
}

/// The response owed to `rejection` (`None` when no request id could be read).
pub(crate) fn response(
    rejection: &Rejection,
    line: Refused<'_>,
    limits: &Limits,
) -> Option<V1Response> {
    let id = rejection.id.clone()?;
    Some(V1Response::failure(id, error(rejection, line, limits)))
}

fn error(rejection: &Rejection, line: Refused<'_>, limits: &Limits) -> V1Error {
    let mut error = V1Error::from(rejection);
    match (rejection.code, line) {
        (RejectCode::PayloadTooLarge, line) => {
            let size = match line {
                Refused::Held(raw) => raw.len() as u64,
                Refused::TooLong(len) => len,
            };
            error.details =
                Some(json!({"limit": "maxBytes", "max": limits.max_bytes, "size": size}));
        }
        (RejectCode::InvalidJson, Refused::Held(raw)) if limits.depth_exceeded(raw) => {
            error.details = Some(json!({"limit": "maxDepth", "max": limits.max_depth}));
        }
        (RejectCode::InvalidJson, Refused::Held(raw)) => match std::str::from_utf8(raw) {
            Err(bad) => {
                let offset = bad.valid_up_to();
                error.message = format!(
                    "the message is not valid UTF-8 (first invalid byte at offset {offset}); \
                     send UTF-8 encoded JSON, one envelope per line"
                );
                error.details = Some(json!({"encoding": "utf-8", "offset": offset}));
            }
            Ok(_) => {
                error.message = format!("{}; send one v1 JSON envelope per line", rejection.detail);
            }
        },
        _ => {}
    }
    error
}
