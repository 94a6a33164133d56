//! The BreadBoard client: real captures replayed through it, and resume, gap, cut, auth and
//! delete behaviour against the in-process fake engine.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod captures;
mod fake_engine;
mod handover;
mod liveness;
mod rest;
mod rest_captures;
mod support;
