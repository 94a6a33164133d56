//! The pure domain core: classifying raw engine events into stable view-model classes, the
//! reducers that fold them into a session view model, delta batching and coalescing, preview
//! truncation, secret redaction and workspace path containment.
//!
//! IO contract: this crate does no IO and reads no clock; time is passed in.
