//! The stdio webview bridge: JSON Lines v1 envelopes on stdin/stdout, wired to an engine
//! through the host service, with logs on stderr.
//!
//! IO contract: reads stdin and writes stdout through the webview sink port.
