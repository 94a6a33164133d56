//! Unit tests of the pure parts: form answers, config option values, the paths a tool call
//! names, line slicing, the stderr tail, terminal output bounds, remembered options.

use serde_json::{Value, json};

use crate::asks::{check_form, tool_call_paths, writes_files};
use crate::caps::{check_option_value, select_values};
use crate::fs::slice_lines;
use crate::sidebar::config::{CONFIG_FILE, ConfigMemory, remembered_changes};
use crate::terminal::Output;
use crate::watch::StderrTail;

#[test]
fn form_answers_are_checked_against_the_schema() {
    let schema = json!({"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}, "ok": {"type": "boolean"},
        "color": {"type": "string", "enum": ["red", "blue"]}, "tags": {"type": "array"}}});
    let check = |v: Value| check_form(&schema, v.as_object().unwrap());
    assert_eq!(
        check(json!({"name": "Ada", "age": 3, "ok": true, "color": "red", "tags": ["a"]})),
        Ok(())
    );
    let err = check(json!({"age": 1.5, "color": "green", "extra": 1, "tags": [1]})).unwrap_err();
    for part in [
        "name is required",
        "age must be a integer",
        "color must be one of",
        "extra is not a field",
        "tags must be a array",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
}

#[test]
fn config_values_must_be_offered() {
    let options = vec![
        json!({"id": "model", "type": "select", "currentValue": "a",
               "options": [{"value": "a", "name": "A"}, {"group": "g", "name": "G", "options": [{"value": "b", "name": "B"}]}]}),
        json!({"id": "fast", "type": "boolean", "currentValue": false}),
    ];
    assert_eq!(select_values(&options[0]), ["a", "b"]);
    assert!(check_option_value(&options, "model", &json!("b")).is_ok());
    assert!(check_option_value(&options, "fast", &json!(true)).is_ok());
    for (id, value, needle) in [
        ("model", json!("c"), "takes [\"a\", \"b\"]"),
        ("model", json!(true), "as a string"),
        ("fast", json!("yes"), "true or false"),
        ("speed", json!("x"), "no config option \"speed\""),
    ] {
        let err = check_option_value(&options, id, &value).unwrap_err();
        assert_eq!(err.code(), "invalid_params");
        assert!(err.to_string().contains(needle), "{id} {value}: {err}");
    }
}

#[test]
fn remembered_options_apply_only_where_they_are_offered_and_differ() {
    let options = vec![
        json!({"id": "model", "category": "model", "type": "select", "currentValue": "a",
               "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]}),
        json!({"id": "agent-mode", "category": "mode", "type": "select", "currentValue": "build",
               "options": [{"value": "build", "name": "Build"}, {"value": "plan", "name": "Plan"}]}),
    ];
    let remembered = [
        ("model".to_owned(), json!("b")),
        ("mode".to_owned(), json!("build")),
        ("effort".to_owned(), json!("high")),
    ]
    .into_iter()
    .collect();
    assert_eq!(remembered_changes(&options, &remembered), [("model".to_owned(), json!("b"))]);
    let gone = [("model".to_owned(), json!("z"))].into_iter().collect();
    assert!(remembered_changes(&options, &gone).is_empty());
}

#[test]
fn remembered_options_are_kept_per_agent_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let state = || Some(dir.path().join("state"));
    ConfigMemory::load(state(), "kilo").remember("model", json!("b"));
    ConfigMemory::load(state(), "other").remember("mode", json!("plan"));
    ConfigMemory::load(state(), "kilo").remember("mode", json!("build"));

    let kilo = ConfigMemory::load(state(), "kilo").values();
    assert_eq!(kilo.get("model"), Some(&json!("b")));
    assert_eq!(kilo.get("mode"), Some(&json!("build")));
    assert_eq!(ConfigMemory::load(state(), "other").values().get("mode"), Some(&json!("plan")));
    let names: Vec<_> = std::fs::read_dir(dir.path().join("state"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, [CONFIG_FILE], "only the file itself, no temporary one left");

    // A broken file is replaced at the next change, nothing of it kept.
    std::fs::write(dir.path().join("state").join(CONFIG_FILE), b"{not json").unwrap();
    let fresh = ConfigMemory::load(state(), "kilo");
    assert!(fresh.values().is_empty());
    fresh.remember("model", json!("a"));
    assert_eq!(ConfigMemory::load(state(), "kilo").values().get("model"), Some(&json!("a")));
}

#[test]
fn a_tool_call_names_its_paths() {
    let call = json!({"kind": "edit", "locations": [{"path": "/w/a.txt"}, {"path": "/w/./a.txt"}],
                      "rawInput": {"filepath": "/w/b/../c.txt", "diff": "…"}});
    assert_eq!(tool_call_paths(&call), ["/w/a.txt", "/w/c.txt"]);
    assert!(writes_files(Some("edit")) && writes_files(Some("move")));
    assert!(!writes_files(Some("execute")) && !writes_files(None));
}

#[test]
fn reads_slice_by_line() {
    let text = "one\ntwo\nthree\n";
    assert_eq!(slice_lines(text, None, None), text);
    assert_eq!(slice_lines(text, Some(2), None), "two\nthree\n");
    assert_eq!(slice_lines(text, Some(2), Some(1)), "two\n");
    assert_eq!(slice_lines(text, None, Some(1)), "one\n");
    assert_eq!(slice_lines(text, Some(9), Some(1)), "");
    assert_eq!(slice_lines(text, Some(0), Some(1)), "one\n", "line 0 reads as 1");
}

#[test]
fn the_stderr_tail_is_bounded_and_redacted() {
    let mut tail = StderrTail::default();
    assert_eq!(tail.report(), None);
    for i in 0..30 {
        tail.push(format!("line {i}"));
    }
    tail.push("   ".to_owned());
    tail.push("Authorization: Bearer abcdef0123456789abcdef".to_owned());
    let report = tail.report().unwrap();
    assert!(!report.contains("line 10 ") && report.contains("line 29"), "{report}");
    assert!(!report.contains("abcdef0123456789abcdef"), "{report}");
    tail.push("x".repeat(5000));
    let report = tail.report().unwrap();
    assert_eq!(report.chars().count(), crate::STDERR_TAIL_CHARS + 1, "…plus the last characters");
}

#[test]
fn terminal_output_keeps_its_last_bytes_on_a_char_boundary() {
    let mut out = Output { limit: 10, ..Output::default() };
    out.push("ab");
    assert_eq!((out.text.as_str(), out.truncated), ("ab\n", false));
    out.push("ééééé");
    assert!(out.truncated);
    assert!(out.text.len() <= 10 + 1, "{:?}", out.text);
    assert!(out.text.ends_with("é\n"), "{:?}", out.text);
}
