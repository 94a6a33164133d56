//! The host core that both bridges share: the tab/session/message identity maps with per-tab
//! delivery indices, buffering while the webview is hidden, pending permission bookkeeping and
//! the flush schedule, as a state machine fed inputs with `now` passed in.
//!
//! IO contract: this crate does no IO and reads no clock.
