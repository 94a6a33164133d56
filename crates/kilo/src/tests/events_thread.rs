//! The Kilo adapter's event path runs on the runtime `KiloOptions::events` names (an embedder
//! with a runtime of its own for it; the bridges leave it unset) against a `wiremock` engine,
//! its updates reaching a runtime that is blocked meanwhile.

use std::sync::Arc;
use std::time::Duration;

use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use bb_host::Input;
use serde_json::json;

use super::faults::{SES, engine_with};
use crate::{KiloAdapter, KiloOptions};

#[tokio::test]
async fn the_kilo_event_path_runs_on_it() {
    let sse = "data: {\"type\":\"session.status\",\"properties\":{\"sessionID\":\"ses_a\",\
               \"status\":{\"type\":\"busy\"}}}\n\n";
    let server = engine_with(sse, json!([])).await;
    let events = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let handle = events.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || events.block_on(stopped));
    let options = KiloOptions { events: Some(handle), ..KiloOptions::default() };
    let (adapter, mut updates) = KiloAdapter::with_options(options);
    let transport =
        HttpTransport::new(&server.uri(), EngineAuth::None, HttpOptions::default()).unwrap();
    adapter.bind(Arc::new(transport));
    // This test's runtime is blocked from here on (no `.await`): the event can only arrive
    // if the router and the pump run elsewhere.
    let mut waited = Duration::ZERO;
    let got = loop {
        match updates.try_recv() {
            Ok(Input::Events { session_id, events }) => {
                break (session_id.to_string(), events[0].0.event_type.clone());
            }
            Ok(_) => {}
            Err(_) => {
                assert!(waited < Duration::from_secs(20), "no event from the events thread");
                std::thread::sleep(Duration::from_millis(20));
                waited += Duration::from_millis(20);
            }
        }
    };
    assert_eq!(got, (SES.to_owned(), "session.status".into()));
    drop(adapter);
    stop.send(()).unwrap();
    thread.join().unwrap().unwrap();
}
