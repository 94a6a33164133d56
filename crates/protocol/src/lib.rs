//! The wire contract between a webview and the bridge: the v1 RPC envelope (`req`/`res`/`evt`)
//! and the WebSocket envelope (`request`/`response`/`event`), their typed params, results and
//! event payloads, and the validation that turns raw JSON into them.
//!
//! IO contract: this crate does no IO; it turns bytes into typed messages and back.
