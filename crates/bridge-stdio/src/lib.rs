//! The stdio webview bridge: JSON Lines framing, one v1 envelope per line in each direction,
//! every inbound line validated with `bb-protocol` before the service sees it and every
//! outbound envelope validated before it is written.
//!
//! IO contract: reads and writes the byte streams it is given (stdin/stdout for
//! [`stdio`], the clients of a Unix socket for [`socket`]); logs go to `tracing`, never to
//! the output stream.
//!
//! # Rules
//!
//! * A line is terminated by `\n`; a trailing `\r` is dropped. A line longer than the
//!   protocol's byte limit is read to its end and rejected as `payload_too_large` without
//!   being held in memory: past the limit its bytes are only counted and fed to
//!   `bb_protocol::IdSniffer`, which reads the top-level `kind`/`id` wherever they are.
//! * Every invalid line is logged as a protocol violation (code only, never the content) and,
//!   when it reads as a request whose id can be read (by the decoder, or by the sniffer from
//!   the raw bytes when the line is too long, too deep, not UTF-8 or not JSON), answered with
//!   exactly one error response carrying that id and the rejection code. The message says what
//!   to do; `details` names the limit that was hit (`{limit: "maxBytes", max, size}`,
//!   `{limit: "maxDepth", max}`) or where the UTF-8 broke (`{encoding: "utf-8", offset}`).
//!   Responses and events sent by the webview are violations too (the webview only sends
//!   requests) and are not answered.
//! * An outbound envelope that fails validation is not written: an error response is
//!   written instead when it was a response (`internal_error`), an event is dropped and
//!   logged.
//! * End of input (or `shutdown` resolving) closes the inbound side; the service then stops
//!   the engine and the writer finishes once the service drops its sender.

mod answer;
mod framing;
mod line;
#[cfg(unix)]
mod process_io;
#[cfg(unix)]
pub mod socket;

pub use framing::{Bridge, encode, encode_into, spawn_io, stdio};

#[cfg(test)]
mod tests;
