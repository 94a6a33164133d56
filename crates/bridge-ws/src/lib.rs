//! The WebSocket webview bridge: `request`/`response`/`event` envelopes over a loopback
//! WebSocket with `?token=` authentication.
//!
//! IO contract: owns the WebSocket listener; everything else goes through the host service.
