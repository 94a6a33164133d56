//! The HTTP transport keeps its secret out of `Debug`; only plain ids become path segments.

use secrecy::SecretString;

use crate::transport::{EngineAuth, HttpOptions, HttpTransport, is_path_segment};

#[test]
fn debug_output_never_shows_the_secret() {
    for auth in [
        EngineAuth::Basic { user: "kilo".into(), password: SecretString::from("hunter2-pass") },
        EngineAuth::Bearer(SecretString::from("hunter2-pass")),
    ] {
        let transport =
            HttpTransport::new("http://127.0.0.1:4096", auth, HttpOptions::default()).unwrap();
        let shown = format!("{transport:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}

#[test]
fn path_segments_are_plain_ids_only() {
    let long = "a".repeat(129);
    for ok in ["ses_01JX", "per-1", "0b6c4d2e-9f1a-4c55-8f62-3e0d8f1b2a77", &long[..128]] {
        assert!(is_path_segment(ok), "{ok:?}");
    }
    for bad in ["", "..", "../config", "a/b", "a?x=1", "a#b", "a%2F", "é", " a", &long[..]] {
        assert!(!is_path_segment(bad), "{bad:?}");
    }
}
