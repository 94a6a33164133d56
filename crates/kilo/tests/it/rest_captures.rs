//! Every REST answer captured from the real engines decodes through `KiloClient` (the
//! typed answers tolerate every field the engines send).

use std::path::PathBuf;
use std::sync::Arc;

use bb_engine_client::fake::FakeTransport;
use bb_engine_client::transport::{EngineResponse, HttpMethod};
use bb_kilo::client::{CreateSession, KiloClient};
use bytes::Bytes;
use serde_json::Value;

#[tokio::test]
async fn captured_rest_answers_decode() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo");
    let mut decoded = 0;
    for dir in [root.clone(), root.join("opencode")] {
        let mut metas: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".meta.json"))
            .collect();
        metas.sort();
        for meta_path in metas {
            let meta: Value =
                serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
            for action in meta["actions"].as_array().unwrap() {
                let method = action["method"].as_str().unwrap();
                let path = action["path"].as_str().unwrap().split('?').next().unwrap();
                let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
                let body = action.get("response").cloned().unwrap_or(Value::Null);
                let fake = FakeTransport::new();
                let http_method = match method {
                    "GET" => HttpMethod::Get,
                    "POST" => HttpMethod::Post,
                    "DELETE" => HttpMethod::Delete,
                    _ => continue,
                };
                let response = EngineResponse {
                    status: 200,
                    headers: Vec::new(),
                    body: Bytes::from(if body.is_null() {
                        String::new()
                    } else {
                        body.to_string()
                    }),
                };
                fake.route(http_method, path, Ok(response));
                let kilo = KiloClient::new(Arc::new(fake));
                let what = format!("{} {method} {path}", meta_path.display());
                let ok = match (method, segments.as_slice()) {
                    ("POST", ["session"]) => {
                        kilo.create_session(&CreateSession::default()).await.map(drop)
                    }
                    ("GET", ["session", "status"]) => kilo.status().await.map(drop),
                    ("GET", ["session", id]) => kilo.get_session(id).await.map(drop),
                    ("DELETE", ["session", id]) => kilo.delete_session(id).await.map(drop),
                    ("GET", ["session", id, "message"]) => kilo.messages(id).await.map(drop),
                    ("POST", ["session", id, "abort"]) => kilo.abort(id).await.map(drop),
                    ("GET", ["permission"]) => kilo.permissions().await.map(drop),
                    _ => continue,
                };
                ok.unwrap_or_else(|e| panic!("{what}: {e}"));
                decoded += 1;
            }
        }
    }
    assert!(decoded >= 25, "only {decoded} captured answers decoded");
}
