//! `EventId`: read and written as the `String` it replaces, at every length on either side
//! of the inline limit.

use proptest::prelude::*;

use crate::EventId;

/// The id as `String` would be: the same JSON both ways, the same text, the same `Debug`.
fn check(text: &str) {
    let id = EventId::from(text);
    assert_eq!(id.as_str(), text);
    assert_eq!(EventId::from(text.to_owned()), id);
    assert_eq!(String::from(id.clone()), text);
    assert_eq!(format!("{id:?}"), format!("{text:?}"));
    let json = serde_json::to_string(&id).unwrap();
    assert_eq!(json, serde_json::to_string(text).unwrap());
    let back: EventId = serde_json::from_str(&json).unwrap();
    assert_eq!(back, text);
    // A string read with escapes (an owned one from serde_json) too.
    let escaped = serde_json::to_string(&format!("\n{text}")).unwrap();
    let back: EventId = serde_json::from_str(&escaped).unwrap();
    assert_eq!(back.as_str(), format!("\n{text}"));
}

#[test]
fn an_id_is_kept_inline_up_to_30_bytes_and_reads_as_its_text_at_every_length() {
    for len in 0..=40 {
        let text: String = "0123456789abcdefghijklmnopqrstuvwxyz!#$%".chars().take(len).collect();
        check(&text);
        assert_eq!(EventId::from(text.as_str()).is_inline(), len <= 30, "{len} bytes");
        assert_eq!(EventId::from(text).is_inline(), len <= 30, "{len} bytes, owned");
    }
    // Multi-byte characters across the limit: 29 bytes and a 2-byte one is 31.
    for text in [
        "é".repeat(15),
        "é".repeat(16),
        format!("{}é", "a".repeat(29)),
        format!("{}€", "a".repeat(27)),
        "€".repeat(10),
        "😀".repeat(7),
        "😀".repeat(8),
    ] {
        check(&text);
        assert_eq!(EventId::from(text.as_str()).is_inline(), text.len() <= 30, "{text}");
    }
    // A Kilo event id is kept inline.
    assert!(EventId::from("evt_200a145e0001vIRAJR4PaKb3MY").is_inline());
    assert_eq!(EventId::default(), "");
    assert!(EventId::default().is_inline());
}

#[test]
fn an_id_that_is_not_a_string_is_refused_as_a_string_is() {
    for json in ["1", "null", "[]", "{}", "true"] {
        let id = serde_json::from_str::<EventId>(json).unwrap_err().to_string();
        let string = serde_json::from_str::<String>(json).unwrap_err().to_string();
        assert_eq!(id, string, "{json}");
    }
}

proptest! {
    #[test]
    fn any_id_reads_and_writes_as_its_string(text in ".{0,40}") {
        check(&text);
    }
}
