//! The URL line, the page with its CSP and config, and who may connect.

use crate::harness::{Gateway, http_get};

#[test]
fn prints_one_url_line_and_serves_the_page_under_a_strict_csp() {
    let gw = Gateway::start(&[]);
    let port = gw.addr.strip_prefix("127.0.0.1:").unwrap();
    assert_eq!(gw.line, format!("open http://127.0.0.1:{port}/?token={}", gw.token));
    assert_eq!(gw.token.len(), 64);
    assert!(gw.token.bytes().all(|b| b.is_ascii_hexdigit()));

    let (head, body) = http_get(&gw.addr, &format!("/?token={}", gw.token), &gw.addr, None);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let csp = head
        .lines()
        .find_map(|l| l.strip_prefix("content-security-policy: "))
        .expect("a CSP header");
    let nonce = csp.split("'nonce-").nth(1).and_then(|r| r.split('\'').next()).unwrap();
    assert_eq!(nonce.len(), 32);
    assert!(csp.starts_with("default-src 'none';"), "{csp}");
    assert!(csp.contains(&format!("script-src 'nonce-{nonce}'")), "{csp}");
    assert!(csp.contains(&format!("style-src 'nonce-{nonce}'")), "{csp}");
    assert!(csp.contains(&format!("connect-src ws://127.0.0.1:{port};")), "{csp}");
    assert!(!csp.contains("unsafe-inline") && !csp.contains("http"), "{csp}");
    for header in [
        "referrer-policy: no-referrer",
        "cache-control: no-store",
        "x-content-type-options: nosniff",
    ] {
        assert!(head.contains(header), "{header} in {head}");
    }
    let config = format!(
        r#"window.__APP_CONFIG__ = {{"wsUrl":"ws://127.0.0.1:{port}/ws","authToken":"{}","settings":{{"engineLabel":"Demo engine"}}}};"#,
        gw.token
    );
    assert!(body.contains(&config), "{body}");
    // Every script and stylesheet carries this load's nonce; nothing is loaded from elsewhere.
    assert_eq!(
        body.matches("<script").count(),
        body.matches(&format!("nonce=\"{nonce}\"")).count() - 1
    );
    assert!(!body.contains("http://") && !body.contains("https://"), "{body}");

    // A second load gets a fresh nonce.
    let (again, _) = http_get(&gw.addr, &format!("/?token={}", gw.token), &gw.addr, None);
    assert!(!again.contains(nonce));

    for (asset, kind) in
        [("app.js", "text/javascript"), ("view.js", "text/javascript"), ("style.css", "text/css")]
    {
        let (head, body) = http_get(&gw.addr, &format!("/assets/{asset}"), &gw.addr, None);
        assert!(head.starts_with("HTTP/1.1 200") && head.contains(kind), "{asset}: {head}");
        assert!(!body.is_empty());
    }
    let (head, _) = http_get(&gw.addr, "/assets/../Cargo.toml", &gw.addr, None);
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

#[test]
fn the_page_is_refused_without_the_token_or_under_a_foreign_host() {
    let gw = Gateway::start(&[]);
    let port = gw.addr.strip_prefix("127.0.0.1:").unwrap();
    let good = format!("/?token={}", gw.token);
    let cases: [(&str, String, String, &str); 6] = [
        ("no token", "/".into(), gw.addr.clone(), "403"),
        ("wrong token", format!("/?token={}", "0".repeat(64)), gw.addr.clone(), "403"),
        ("short token", "/?token=abc".into(), gw.addr.clone(), "403"),
        ("rebinding host", good.clone(), format!("evil.example:{port}"), "421"),
        ("other port", good.clone(), "127.0.0.1:1".into(), "421"),
        ("localhost", good.clone(), format!("localhost:{port}"), "200"),
    ];
    for (name, path, host, status) in cases {
        let (head, body) = http_get(&gw.addr, &path, &host, None);
        assert!(head.starts_with(&format!("HTTP/1.1 {status}")), "{name}: {head}");
        if status != "200" {
            assert!(body.starts_with("refused:"), "{name}: {body}");
            assert!(!body.contains(&gw.token), "{name}");
        }
    }
    let (head, _) = http_get(&gw.addr, &good, &gw.addr, Some("https://evil.example"));
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
}

#[tokio::test]
async fn websocket_upgrades_need_the_token_an_allowed_origin_and_a_loopback_host() {
    let gw = Gateway::start(&["--allow-origin", "https://ide.example"]);
    let port = gw.addr.strip_prefix("127.0.0.1:").unwrap();
    let own = format!("http://127.0.0.1:{port}");
    // (case, token, Origin, Host, refusal status)
    type Case = (&'static str, String, Option<String>, Option<String>, Option<u16>);
    let cases: Vec<Case> = vec![
        ("no origin (a non-browser client)", gw.token.clone(), None, None, None),
        ("own origin", gw.token.clone(), Some(own.clone()), None, None),
        ("tauri", gw.token.clone(), Some("tauri://localhost".into()), None, None),
        ("configured extra", gw.token.clone(), Some("https://ide.example".into()), None, None),
        ("missing token", String::new(), Some(own.clone()), None, Some(403)),
        ("wrong token", "f".repeat(64), Some(own.clone()), None, Some(403)),
        ("foreign origin", gw.token.clone(), Some("https://evil.example".into()), None, Some(403)),
        ("null origin", gw.token.clone(), Some("null".into()), None, Some(403)),
        ("rebinding host", gw.token.clone(), None, Some(format!("evil.example:{port}")), Some(421)),
    ];
    for (name, token, origin, host, refused) in cases {
        let result = gw.try_connect("/ws", &token, origin.as_deref(), host.as_deref()).await;
        match (refused, result) {
            (None, Ok(_)) => {}
            (Some(status), Err(tokio_tungstenite::tungstenite::Error::Http(response))) => {
                assert_eq!(response.status().as_u16(), status, "{name}");
            }
            (want, got) => panic!("{name}: want refusal {want:?}, got {:?}", got.map(|_| "open")),
        }
    }
    // The token never reaches the logs, refused or not.
    let logs = gw.logs();
    assert!(logs.contains("refused a request"), "refusals are logged");
    assert!(!logs.contains(&gw.token), "the token is never logged");
}
