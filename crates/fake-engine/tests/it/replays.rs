//! Every upstream replay fixture played by the fake gives the event log the real engine
//! recorded (`replay_all.sse`): same types, payloads, turns and `seq`s, including the
//! `completion`/`run_finished` the engine adds.

use bb_fake_engine::EngineConfig;
use serde_json::Value;

use super::support::{BOUND, capture, create, fixtures, input, read_events, start};

#[tokio::test]
async fn every_replay_fixture_reproduces_the_captured_event_log() {
    let engine = start(EngineConfig::default()).await;
    let http = reqwest::Client::new();
    let mut dirs: Vec<_> =
        std::fs::read_dir(fixtures().join("replays")).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    let runs = dirs.iter().map(|dir| {
        let http = http.clone();
        let url = engine.url().to_owned();
        async move {
            let expected = capture(&dir.join("replay_all.sse"));
            let session = create(&http, &url).await;
            let source = dir.join("source.jsonl");
            assert_eq!(
                input(&http, &url, &session, &format!("replay:{}", source.display())).await,
                202
            );
            let stream = http
                .get(format!("{url}/v1/sessions/{session}/events?replay=true"))
                .send()
                .await
                .unwrap();
            assert_eq!(stream.headers()["content-type"], "text/event-stream; charset=utf-8");
            let (got, _) = read_events(stream, |seen| seen.len() == expected.len()).await;
            assert_eq!(got.len(), expected.len(), "{}", dir.display());
            for (g, e) in got.iter().zip(&expected) {
                let name = dir.display();
                assert_eq!(g.id, e["seq"].to_string(), "{name}");
                for field in ["seq", "type", "turn", "protocol_version"] {
                    assert_eq!(g.data[field], e[field], "{name}: {field} of {e}");
                }
                assert_eq!(g.data["session_id"], Value::String(session.clone()));
                assert_eq!(g.data["timestamp"], g.data["timestamp_ms"]);
                assert_eq!(g.data["id"].as_str().unwrap().len(), 36);
                if !e["type"].as_str().unwrap().starts_with("skills_") {
                    assert_eq!(
                        g.data["payload"], e["payload"],
                        "{name}: payload of seq {}",
                        e["seq"]
                    );
                }
            }
        }
    });
    tokio::time::timeout(BOUND, futures_util::future::join_all(runs)).await.unwrap();
}
