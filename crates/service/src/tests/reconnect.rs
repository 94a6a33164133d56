//! A reconnecting engine stream's `bb/connection` says which attempt it is (`attempt` next
//! to `retryCount`), and a connected one says none.

use bb_protocol::v1::{ConnectionStatus, V1Call, V1Topic};

use super::{next_topic, request, start, until_response};
use bb_host::Input;

#[tokio::test]
async fn a_reconnecting_stream_reports_its_attempt() {
    let (mut w, service, tx) = start();
    request(&w, "i", V1Call::Init(Default::default())).await;
    until_response(&mut w, "i").await;
    let update = |status, retry_count| Input::connection(status, retry_count, None);
    tx.send(update(ConnectionStatus::Connecting, Some(3))).await.unwrap();
    let connecting = |t: &V1Topic| matches!(t, V1Topic::Connection(c) if c.status == ConnectionStatus::Connecting && c.retry_count.is_some());
    let V1Topic::Connection(c) = next_topic(&mut w, connecting).await else { unreachable!() };
    assert_eq!((c.retry_count, c.attempt), (Some(3), Some(3)), "{c:?}");
    tx.send(update(ConnectionStatus::Connected, None)).await.unwrap();
    let connected = |t: &V1Topic| matches!(t, V1Topic::Connection(c) if c.status == ConnectionStatus::Connected);
    let V1Topic::Connection(c) = next_topic(&mut w, connected).await else { unreachable!() };
    assert_eq!(c.attempt, None, "{c:?}");
    drop(w);
    service.await.unwrap().unwrap();
}
