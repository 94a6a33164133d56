//! Integration tests of `bb-kilo`: every real Kilo capture through the router, a fake HTTP
//! engine (faults), the real Kilo engine, captured REST answers, and the supervisor against
//! real processes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod captures;
mod http_faults;
mod real_engine;
mod rest_captures;
mod supervisor;

use bb_engine_client::sse::SseClient;
use bb_kilo::client::{KiloClient, KiloRouterHandle, KiloUpdate, spawn_router_into};
use tokio::sync::mpsc;

/// The router of `client`'s stream `sse`, its updates handed on through a channel of
/// `capacity` (a full channel pauses the router's reading of the stream).
fn spawn_router(
    client: KiloClient,
    sse: SseClient,
    capacity: usize,
) -> (KiloRouterHandle, mpsc::Receiver<KiloUpdate>) {
    let (updates, rx) = mpsc::channel(capacity);
    (spawn_router_into(client, sse, updates), rx)
}
