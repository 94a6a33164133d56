//! Unit tests of the admission checks, the platform port and the v1 → WebSocket mapping.

use bb_protocol::v1::{ConnectionPayload, ConnectionStatus, V1Error, V1Event, V1Response, V1Topic};
use bb_protocol::{Limits, V1Message};
use secrecy::SecretString;

use crate::*;

#[test]
fn token_compare_is_exact() {
    let token = SecretString::from("abc123".to_owned());
    assert!(token_matches(&token, Some("abc123")));
    for wrong in [None, Some(""), Some("abc12"), Some("abc1234"), Some("abc124"), Some("ABC123")] {
        assert!(!token_matches(&token, wrong), "{wrong:?}");
    }
    assert_eq!(query_token(Some("a=1&token=xyz")), Some("xyz"));
    assert_eq!(query_token(Some("tokens=xyz")), None);
    assert_eq!(query_token(None), None);
}

#[test]
fn fresh_tokens_differ_and_are_long() {
    use secrecy::ExposeSecret;
    let (a, b) = (fresh_token(), fresh_token());
    assert_eq!(a.expose_secret().len(), 64);
    assert_ne!(a.expose_secret(), b.expose_secret());
}

#[test]
fn host_must_be_loopback_with_our_port() {
    for ok in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080", "[::1]:8080"] {
        assert!(host_allowed(Some(ok), 8080), "{ok}");
    }
    for bad in [
        None,
        Some("127.0.0.1"),
        Some("127.0.0.1:8081"),
        Some("evil.example:8080"),
        Some("127.0.0.1.evil:8080"),
    ] {
        assert!(!host_allowed(bad, 8080), "{bad:?}");
    }
}

#[test]
fn origins_are_an_allow_list() {
    let policy = OriginPolicy::new(8080, &["https://ide.example/".to_owned()]);
    for ok in [
        None,
        Some("http://127.0.0.1:8080"),
        Some("http://localhost:8080"),
        Some("tauri://localhost"),
        Some("https://ide.example"),
    ] {
        assert!(policy.allows(ok), "{ok:?}");
    }
    for bad in
        ["http://127.0.0.1:8081", "https://evil.example", "null", "http://localhost:8080.evil"]
    {
        assert!(!policy.allows(Some(bad)), "{bad}");
    }
}

#[test]
fn v1_messages_map_to_ws_messages() {
    let limits = Limits::default();
    let ok =
        to_ws(V1Message::Response(V1Response::success("r1", serde_json::json!({"a": 1})))).unwrap();
    assert_eq!(
        ok.to_line(&limits).unwrap(),
        r#"{"type":"response","id":"r1","ok":true,"result":{"a":1}}"#
    );
    let mut error = V1Error::new("session_not_found", "no such session");
    error.details = Some(serde_json::json!({"sessionId": "s1"}));
    let failed = to_ws(V1Message::Response(V1Response::failure("r2", error))).unwrap();
    assert_eq!(
        failed.to_line(&limits).unwrap(),
        r#"{"type":"response","id":"r2","ok":false,"error":{"message":"no such session","code":"session_not_found","data":{"sessionId":"s1"}}}"#
    );
    let payload =
        ConnectionPayload { status: ConnectionStatus::Connected, ..ConnectionPayload::default() };
    let event = to_ws(V1Message::Event(V1Event::new(V1Topic::Connection(payload)))).unwrap();
    assert_eq!(
        event.to_line(&limits).unwrap(),
        r#"{"type":"event","event":"bb/connection","payload":{"status":"connected"}}"#
    );
}

#[test]
fn headless_open_path_is_contained_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.txt"), "a").unwrap();
    std::os::unix::fs::symlink("/etc", root.join("escape")).unwrap();
    let platform = HeadlessPlatform::new(root.clone());
    assert_eq!(platform.contained("src/a.txt").unwrap(), root.join("src/a.txt"));
    assert_eq!(
        platform.contained(&root.join("src/a.txt").to_string_lossy()).unwrap(),
        root.join("src/a.txt")
    );
    for outside in ["/etc/passwd", "../x", "escape/passwd", "src/../../x"] {
        let err = platform.contained(outside).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("path_outside_workspace"), "{outside}");
    }
    assert_eq!(platform.contained("a\0b").unwrap_err().code.as_deref(), Some("invalid_path"));
}

#[tokio::test]
async fn headless_dialog_is_unsupported_and_acp_is_not_yet_available() {
    let platform = HeadlessPlatform::new(std::env::temp_dir());
    let err = platform.dialog_open(Default::default()).await.unwrap_err();
    assert_eq!(err.code.as_deref(), Some("unsupported"));
    assert!(err.message.contains("headless"));
    let call = bb_protocol::ws::WsCall::AcpDisconnect(bb_protocol::ws::AcpDisconnectParams {
        id: "c1".into(),
    });
    let err = AcpUnavailable.call(call).await.unwrap_err();
    assert_eq!(err.code.as_deref(), Some("not_supported"));
    assert!(err.message.contains("acp_disconnect"));
}
