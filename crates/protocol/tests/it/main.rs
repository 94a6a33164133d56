//! Integration tests of bb-protocol: the fixture tables under `fixtures/protocol/`, the
//! committed JSON Schemas under `schemas/`, and properties over arbitrary input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fixtures;
mod properties;
mod schemas;
