//! The page applies the bridge's updates as the reference applier (`bb_protocol`'s
//! `UpdatedView`) does: every engine capture fed through the host core, the messages a page
//! receiving updates is sent (in the lanes' batches), applied by the page's own `store.js`
//! under node, hold the same chat.

use std::process::Command;
use std::time::{Duration, Instant};

use bb_host::{Clock, FakeClock, Host, HostConfig, Input};
use bb_protocol::v1::{AppliedBlock, EventsPayload, Receive, UpdatedView, V1Topic};
use bb_test_support::captures::{captures, raw_events};
use serde_json::{Value, json};

use crate::harness::repo_root;

const SESSION: &str = "s1";

/// What a page receiving updates is sent for `events`, fed 8 at a time, 1 ms apart.
fn sent(engine: bb_host::Engine, events: Vec<bb_normalize::RawEvent>) -> Vec<EventsPayload> {
    let c = FakeClock::new(Instant::now(), 0);
    let mut h = Host::new(engine, HostConfig::default());
    h.handle(Input::Opened(1), c.now());
    h.handle(Input::Receive { conn: 1, receive: Receive::Updates }, c.now());
    h.handle(Input::ready(1), c.now());
    h.handle(Input::select(1, SESSION), c.now());
    let mut out = Vec::new();
    let mut drain = |h: &mut Host| {
        while let Some((_, topic)) = h.poll_output() {
            if let V1Topic::Events(p) = topic {
                out.push(p);
            }
        }
    };
    let events: Vec<_> = events
        .into_iter()
        .map(|ev| {
            let class = bb_normalize::classify(&ev);
            let event = bb_protocol::v1::EngineEvent {
                id: ev.id.unwrap_or_default(),
                event_type: ev.kind,
                turn: ev.turn.and_then(|t| u64::try_from(t).ok()),
                ts: ev.ts.map(|t| t as f64),
                payload: if ev.payload.is_object() { ev.payload } else { Default::default() },
            };
            (event, class)
        })
        .collect();
    for part in events.chunks(8) {
        h.handle(
            Input::Events { session_id: SESSION.into(), events: part.to_vec().into() },
            c.now(),
        );
        c.advance(Duration::from_millis(1));
        h.handle_timeout(c.now());
        drain(&mut h);
    }
    while let Some(at) = h.poll_timeout() {
        c.advance_to(at);
        h.handle_timeout(c.now());
        drain(&mut h);
    }
    out
}

fn without(value: impl serde::Serialize, keys: &[&str]) -> Value {
    let mut v = serde_json::to_value(value).unwrap();
    if let Value::Object(map) = &mut v {
        for k in keys {
            map.remove(*k);
        }
    }
    v
}

/// The reference applier's state, in the form `replay.mjs` prints the page's.
fn normal(view: &UpdatedView) -> Value {
    let blocks: Vec<Value> = view
        .blocks
        .iter()
        .map(|(key, b)| match b {
            AppliedBlock::User(u) => {
                let mut f = without(u, &["key", "text"]);
                f["text"] = json!(u.text.text);
                json!([key, "user", f])
            }
            AppliedBlock::Text(state, text) => {
                let mut f = without(state, &["key", "text"]);
                f["text"] = json!(text);
                json!([key, "text", f])
            }
            AppliedBlock::Tool(t) => json!([key, "tool", without(t, &["key"])]),
            AppliedBlock::Ask(a) => json!([key, "ask", without(a, &["key"])]),
            AppliedBlock::Status(s) => json!([key, "status", without(s, &["key"])]),
        })
        .collect();
    json!({
        "blocks": blocks,
        "run": view.run,
        "tasks": view.tasks.values().collect::<Vec<_>>(),
        "todos": view.todos.as_ref().map(|t| &t.items),
        "files": view.files.values().collect::<Vec<_>>(),
        "unknown": view.unknown.keys().collect::<Vec<_>>(),
        "missed": view.missed,
    })
}

#[test]
fn the_page_store_applies_updates_as_the_reference_does() {
    let mut cases = Vec::new();
    let mut expected = std::collections::BTreeMap::new();
    for (engine, path) in captures() {
        let events = raw_events(engine, &path);
        if events.is_empty() {
            continue;
        }
        let messages = sent(engine, events);
        let mut view = UpdatedView::new();
        for m in &messages {
            if m.resync == Some(true) {
                view = UpdatedView::new();
            }
            for u in m.updates.as_ref().map(|u| u.items()).unwrap_or_default() {
                view.apply(&u);
            }
        }
        let name = path.display().to_string();
        expected.insert(name.clone(), normal(&view));
        cases.push(json!({"name": name, "session": SESSION, "messages": messages}));
    }
    assert!(cases.len() >= 40, "captures missing: {}", cases.len());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cases.json");
    std::fs::write(&file, serde_json::to_vec(&cases).unwrap()).unwrap();
    let out = Command::new("node")
        .arg("replay.mjs")
        .arg(&file)
        .current_dir(repo_root().join("apps/gateway/tests/browser"))
        .output()
        .expect("node runs (it is needed for the page tests)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut seen = 0;
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let got: Value = serde_json::from_str(line).unwrap();
        let name = got["name"].as_str().unwrap();
        assert_eq!(
            got["state"], expected[name],
            "{name}: the page's chat differs from the reference"
        );
        seen += 1;
    }
    assert_eq!(seen, cases.len());
}

/// Every property name of the bridge's own wire contract (`schemas/`): the page may use those.
fn contract_words() -> std::collections::BTreeSet<String> {
    fn walk(v: &Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    out.extend(props.keys().cloned());
                }
                for (k, x) in map {
                    if k == "const" || k == "enum" {
                        // Values of the contract's enums (`userMessage`, `running`, …).
                        match x {
                            Value::String(s) => {
                                out.insert(s.clone());
                            }
                            Value::Array(a) => {
                                out.extend(a.iter().filter_map(|s| s.as_str().map(str::to_owned)))
                            }
                            _ => {}
                        }
                    }
                    walk(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    let mut stack = vec![repo_root().join("schemas")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                walk(&serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap(), &mut out);
            }
        }
    }
    out
}

/// The engines' words: every event type and class of the captures (and every type the
/// BreadBoard engine defines), and every key of their payloads that is an engine's own
/// (`call_id`, `callID`, `item_id`, `filePath`, …; plain words like `path` or `text` name
/// nothing of an engine's).
fn engine_words() -> std::collections::BTreeSet<String> {
    fn keys(v: &Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    if k.contains(['_', '.']) || k.chars().any(|c| c.is_ascii_uppercase()) {
                        out.insert(k.clone());
                    }
                    keys(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
            _ => {}
        }
    }
    let mut out: std::collections::BTreeSet<String> =
        bb_fake_engine::EVENT_TYPES.iter().map(|t| (*t).to_owned()).collect();
    for (engine, path) in captures() {
        for ev in raw_events(engine, &path) {
            out.insert(ev.kind.to_string());
            keys(&ev.payload, &mut out);
            // The classes of the normalization table (`tool.result`, `unknown_event`, …).
            let class = bb_normalize::Classified::new(ev).class.as_str();
            if class.contains(['.', '_']) {
                out.insert(class.to_owned());
            }
        }
    }
    out
}

/// A script without its comments.
fn code_of(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.find('\n').map_or("", |i| &after[i..]);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |i| &after[i + 2..]);
        } else {
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The names a script reads or writes: what follows a `.` (`p.call_id`), object keys
/// (`{ call_id: … }`), and string literals that are one name (`'tool_result'`,
/// `p['call_id']`); names with dots (`'message.part.delta'`) whole and in parts.
fn names_in(
    code: &str,
) -> (std::collections::BTreeSet<String>, std::collections::BTreeSet<String>) {
    let is_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-' | '.');
    let mut runs = std::collections::BTreeSet::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' || c == '`' {
            let end = (i + 1..chars.len())
                .find(|&j| chars[j] == c && chars[j - 1] != '\\')
                .unwrap_or(chars.len());
            let text: String = chars[i + 1..end].iter().collect();
            if !text.is_empty() && text.chars().all(is_name) {
                runs.insert(text);
            }
            i = end + 1;
            continue;
        }
        if is_name(c) && !(c == '.' && i + 1 < chars.len() && chars[i + 1] == '.') {
            let start = i;
            while i < chars.len() && is_name(chars[i]) {
                i += 1;
            }
            let run: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace());
            let key = next == Some(&':') && !matches!(run.as_str(), "case" | "default");
            // `a.b.c`: every name after a dot; an object key.
            let mut names: Vec<&str> = run.split('.').collect();
            if !key {
                names.remove(0);
            }
            runs.extend(names.into_iter().filter(|n| !n.is_empty()).map(str::to_owned));
            if run.contains('.') {
                runs.insert(run.trim_start_matches('.').to_owned());
            }
            continue;
        }
        i += 1;
    }
    let parts = runs.iter().flat_map(|r| r.split('.')).map(str::to_owned).collect();
    (runs, parts)
}

#[test]
fn the_page_scripts_name_no_engine_field_or_event_type() {
    let allowed = contract_words();
    let forbidden: Vec<String> =
        engine_words().into_iter().filter(|w| !allowed.contains(w)).collect();
    assert!(forbidden.iter().any(|w| w == "message.part.delta"), "the engines' words were read");
    let mut hits = Vec::new();
    let dir = repo_root().join("apps/gateway/page");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "js") {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&path).unwrap());
        let (runs, parts) = names_in(&code);
        for word in &forbidden {
            let found = if word.contains('.') { runs.contains(word) } else { parts.contains(word) };
            if found {
                hits.push(format!("{}: {word}", path.file_name().unwrap().to_string_lossy()));
            }
        }
    }
    assert!(hits.is_empty(), "the page names engine fields or event types: {hits:?}");
}
