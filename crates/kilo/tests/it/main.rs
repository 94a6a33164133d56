//! Integration tests of `bb-kilo`: every real Kilo capture through the router, a fake HTTP
//! engine (faults), the real Kilo engine, captured REST answers, and the supervisor against
//! real processes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod captures;
mod http_faults;
mod real_engine;
mod rest_captures;
mod supervisor;
