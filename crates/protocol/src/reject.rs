//! The closed set of rejection codes and the `Rejection` a decoder returns.

use std::fmt;

/// Why a message was rejected. The string forms (`as_str`) are stable wire codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectCode {
    /// Not UTF-8, not JSON, empty, or nested deeper than the limit.
    InvalidJson,
    /// JSON, but not an envelope: wrong shape, unknown kind, missing or ill-typed id, unknown
    /// topic or event name, event payload not matching its topic, inconsistent response.
    InvalidEnvelope,
    /// A v1 message whose `v` is a number other than 1.
    UnsupportedVersion,
    /// A well-formed request naming a method this transport does not have.
    UnknownMethod,
    /// A request for a known method whose params do not match that method.
    InvalidParams,
    /// The raw message is longer than the configured limit (checked before parsing).
    PayloadTooLarge,
}

impl RejectCode {
    /// Every code, in declaration order.
    pub const ALL: [RejectCode; 6] = [
        RejectCode::InvalidJson,
        RejectCode::InvalidEnvelope,
        RejectCode::UnsupportedVersion,
        RejectCode::UnknownMethod,
        RejectCode::InvalidParams,
        RejectCode::PayloadTooLarge,
    ];

    /// The stable wire code, e.g. `"invalid_params"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectCode::InvalidJson => "invalid_json",
            RejectCode::InvalidEnvelope => "invalid_envelope",
            RejectCode::UnsupportedVersion => "unsupported_version",
            RejectCode::UnknownMethod => "unknown_method",
            RejectCode::InvalidParams => "invalid_params",
            RejectCode::PayloadTooLarge => "payload_too_large",
        }
    }

    /// Parses a stable wire code.
    pub fn from_code(code: &str) -> Option<RejectCode> {
        RejectCode::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

impl fmt::Display for RejectCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message the validator refused, with the id of the request to answer when one could be
/// read (the message was recognisably a request and carried a string id).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {detail}")]
pub struct Rejection {
    /// The stable code.
    pub code: RejectCode,
    /// The request id to answer with an error response, if one could be read.
    pub id: Option<String>,
    /// A human-readable explanation. It may quote a short offending value from the message
    /// (a wrong-typed field), so log it only where the message itself could be logged.
    pub detail: String,
}

impl Rejection {
    pub(crate) fn new(code: RejectCode, detail: impl Into<String>) -> Self {
        Rejection { code, id: None, detail: detail.into() }
    }

    pub(crate) fn with_id(mut self, id: Option<&str>) -> Self {
        self.id = id.map(str::to_owned);
        self
    }

    /// `payload_too_large` for a message of `size` bytes over the byte limit `max`: what
    /// [`crate::decode_v1`] answers, also for a bridge that measured a line without holding it.
    pub fn too_large(size: u64, max: usize) -> Self {
        Rejection::new(
            RejectCode::PayloadTooLarge,
            format!(
                "message is {size} bytes, over the maxBytes limit of {max}; send large content \
                 in smaller parts (an attachment, or several messages)"
            ),
        )
    }

    /// The same rejection, answering request `id` when the decoder could not read one (the
    /// bridge read it with [`crate::IdSniffer`]). An id the decoder read is kept.
    pub fn answering(mut self, id: Option<String>) -> Self {
        if self.id.is_none() {
            self.id = id;
        }
        self
    }
}
