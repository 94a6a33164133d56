//! The Kilo supervisor's pure parts: the listening line it reads, the passwords it makes.

use secrecy::ExposeSecret;

use crate::supervisor::{StartError, generate_password, parse_listening_line};

#[test]
fn listening_line() {
    let ok = |l: &str| parse_listening_line(l).map(|r| r.ok());
    assert_eq!(
        ok("kilo server listening on http://127.0.0.1:4096"),
        Some(Some("http://127.0.0.1:4096".into()))
    );
    assert_eq!(
        ok("listening on http://localhost:51000/ now"),
        Some(Some("http://localhost:51000".into()))
    );
    assert_eq!(ok("Warning: KILO_SERVER_PASSWORD is not set; server is unsecured."), None);
    assert_eq!(ok("listening on http://127.0.0.1:"), None);
    assert_eq!(ok("listening on https://127.0.0.1:1"), None);
    assert!(matches!(
        parse_listening_line("kilo server listening on http://0.0.0.0:4096"),
        Some(Err(StartError::NotLoopback(_)))
    ));
}

#[test]
fn passwords_are_fresh_hex() {
    let a = generate_password();
    let b = generate_password();
    assert_eq!(a.expose_secret().len(), 64);
    assert!(a.expose_secret().bytes().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a.expose_secret(), b.expose_secret());
}
