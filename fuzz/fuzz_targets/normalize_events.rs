//! Fuzz target: arbitrary event lines of either engine never panic the parser or the
//! reducers, redaction is idempotent and path checks never panic.
#![no_main]

use bb_normalize::redact::{redact_log_line, redact_text};
use bb_normalize::{Engine, PathFlavor, PathGuard, RawEvent, SessionView};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    // The first byte's bits pick the engine of each line (bit `i % 8` for line `i`), so
    // streams mixing both engines' event kinds are covered; the rest is one JSON event per
    // line.
    let Some((&pick, rest)) = input.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let mut view = SessionView::new();
    for (i, line) in text.lines().enumerate() {
        let engine = if (pick >> (i % 8)) & 1 == 0 { Engine::Kilo } else { Engine::BreadBoard };
        if let Ok(ev) = RawEvent::parse(engine, line, None) {
            view.apply_event(ev);
        }
    }
    let _ = serde_json::to_string(&view);

    let once = redact_text(&text);
    assert_eq!(redact_text(&once), once);
    let line = redact_log_line(&text, 256);
    assert!(line.len() <= 256);
    assert_eq!(redact_log_line(&line, 256), line);

    for flavor in [PathFlavor::Posix, PathFlavor::Windows] {
        let mut guard = PathGuard::new(flavor, if flavor == PathFlavor::Posix { "/ws" } else { "C:\\ws" });
        for p in text.lines().take(8) {
            guard.check(p);
        }
    }
});
