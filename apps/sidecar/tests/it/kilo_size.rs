//! Nothing is lost for its size, on the real Kilo server: a 1.5 MB tool result reaches the
//! webview truncated with a `ref` (and `body.get` returns it whole) while the messages before
//! and after it stay intact; a session of four 300 KB turns survives an engine SIGKILL with
//! every turn visible in the rebuilt transcript.

use serde_json::{Value, json};

use crate::harness::{LONG, World, is_dead};
use crate::kilo::Kilo;

const LIMIT: usize = 1024 * 1024;

fn items(sidecar_lines: &[String], session: &str) -> Vec<Value> {
    sidecar_lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["topic"] == "bb/events" && m["payload"]["sessionId"] == session)
        .flat_map(|m| m["payload"]["events"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// The whole body behind `reference`, page by page.
fn body_get(k: &mut Kilo, session: &str, reference: &str) -> String {
    let mut body = String::new();
    let mut offset = 0;
    loop {
        let res = k.sidecar.call(
            "bb.command",
            json!({"sessionId": session, "command": "body.get",
                   "args": {"ref": reference, "offset": offset}}),
        );
        assert_eq!(res["ok"], true, "body.get: {res}");
        let out = &res["result"]["output"];
        body.push_str(out["text"].as_str().unwrap());
        match out["nextOffset"].as_u64() {
            Some(next) => offset = next,
            None => return body,
        }
    }
}

/// A mock directive calling the write tool with `content` (percent-encoded: the directive
/// is one whitespace- and quote-free token).
fn write_directive(path: &str, content: &str) -> String {
    let args = json!({"filePath": path, "content": content}).to_string();
    let encoded = args
        .replace('%', "%25")
        .replace('"', "%22")
        .replace('\\', "%5C")
        .replace('\'', "%27")
        .replace(' ', "%20");
    format!("MOCK:tool:write:{encoded}")
}

#[test]
fn a_huge_tool_result_is_truncated_with_a_ref_and_nothing_around_it_is_lost() {
    // The write tool's result carries the content it wrote and the diff of the new file:
    // well over 1.5 MB in one event.
    let Some(mut k) = Kilo::start_in(World::new(), "allow", "allow") else { return };
    let session = k.create_session();
    k.send(&session, "Before MOCK:text:first%20answer");
    k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    let content: String = (0..30_000).map(|i| format!("line-{i:06}-of-the-big-file\n")).collect();
    k.send(&session, &format!("Write it {}", write_directive("big.txt", &content)));
    k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    k.send(&session, "After MOCK:text:still%20here");
    k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    for line in &k.sidecar.seen {
        assert!(line.len() < LIMIT, "a line of {} bytes", line.len());
    }
    let all = items(&k.sidecar.seen, &session);
    let truncated: Vec<&Value> = all.iter().filter(|e| e["truncated"].is_object()).collect();
    assert!(!truncated.is_empty(), "the big tool result is marked truncated");
    let t = &truncated[0]["truncated"];
    assert!(t["totalBytes"].as_u64().unwrap() > 1_500_000, "{t}");
    assert_eq!(truncated[0]["class"], "tool.result");
    let full = body_get(&mut k, &session, t["ref"].as_str().unwrap());
    assert_eq!(full.len() as u64, t["totalBytes"].as_u64().unwrap());
    assert!(full.contains("line-029999-of-the-big-file"), "the whole body");
    let written = std::fs::read_to_string(k.world.path("project/big.txt")).unwrap();
    assert_eq!(written, content, "the engine wrote the file");
    // The text before and after the tool result is all there.
    let text: String = all
        .iter()
        .filter(|e| e["type"] == "message.part.delta")
        .filter_map(|e| e["payload"]["delta"].as_str())
        .collect();
    for want in ["first answer", "Tool result received", "still here"] {
        assert!(text.contains(want), "{want:?} in {text:?}");
    }
    let gone = k.sidecar.call(
        "bb.command",
        json!({"sessionId": session, "command": "body.get", "args": {"ref": "body-999999"}}),
    );
    assert_eq!(gone["error"]["code"], "body_not_found");
    k.finish();
}

#[test]
fn a_long_session_survives_an_engine_sigkill_with_every_turn_visible() {
    let Some(mut k) = Kilo::start_with_bash("allow") else { return };
    let session = k.create_session();
    for turn in 0..4 {
        let big = format!("turn-{turn}-start {} turn-{turn}-end", "x".repeat(300_000));
        k.send(&session, &format!("{big} MOCK:text:reply{turn}"));
        k.sidecar.session_events_until(&session, "session.turn.close", LONG);
    }
    let engine = k.engine;
    // SAFETY: signalling the engine process this test's sidecar spawned.
    let rc = unsafe { libc::kill(i32::try_from(engine).unwrap(), libc::SIGKILL) };
    assert_eq!(rc, 0);
    crate::harness::eventually(LONG, "the engine to die", || is_dead(engine));
    let rebuilt = k.sidecar.session_events_until(&session, "bb.session.rehydrated", LONG * 2);
    let snapshot = rebuilt.last().unwrap();
    let messages = snapshot["payload"]["messages"].as_array().unwrap();
    let text = serde_json::to_string(messages).unwrap();
    for turn in 0..4 {
        assert!(text.contains(&format!("turn-{turn}-start")), "turn {turn} is visible");
        assert!(text.contains(&format!("turn-{turn}-end")), "turn {turn}'s tail is visible");
        assert!(text.contains(&format!("reply{turn}")), "reply {turn} is visible");
    }
    let reference = snapshot["truncated"]["ref"].as_str().expect("the snapshot was fitted");
    let full = body_get(&mut k, &session, reference);
    assert!(full.matches(&"x".repeat(300_000)).count() >= 4, "body.get has every turn whole");
    for line in &k.sidecar.seen {
        assert!(line.len() < LIMIT);
    }
    k.engine = k.sidecar.engine_pid();
    k.finish();
}
