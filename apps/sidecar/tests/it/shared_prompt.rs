//! Two windows on one session through `bb-sidecar --listen` (two clients of its socket, each
//! with its own tab): both get the approval card; the first answer wins and reaches the
//! engine once; the other window's card resolves with who answered and how
//! (`bb.prompt.closed` with `answeredBy`), and its late answer is refused naming the winner.
//! On the demo (BreadBoard) engine and on the real Kilo server.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{LONG, Peer, Sidecar, World, asked, kilo_bin_or_skip};

fn socket_path() -> PathBuf {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    std::env::temp_dir().join(format!("bb-shared-{}-{nanos}", std::process::id())).join("s.sock")
}

/// The `bb.prompt.closed` item `peer` gets for `request`, with the message's tab.
fn closed(peer: &mut Peer, request: &str) -> (Value, Value) {
    let is_it = |e: &Value| e["type"] == "bb.prompt.closed" && e["payload"]["requestId"] == request;
    let batch = peer.wait_event(LONG, "bb.prompt.closed", |m| {
        m["topic"] == "bb/events" && m["payload"]["events"].as_array().unwrap().iter().any(is_it)
    });
    let events = batch["payload"]["events"].as_array().unwrap();
    let item = events.iter().find(|e| is_it(e)).unwrap().clone();
    (batch["payload"]["tabId"].clone(), item)
}

/// Two clients, tabs `tab-a` and `tab-b`, on one session; `a` sends `text`; both get the
/// card (`asked_kind`); `a` allows once; both get the card resolved naming `a`'s tab; `b`'s
/// late deny is refused naming the winner; the turn ends (`turn_end`).
fn first_answer_wins(extra: &[&str], text: &str, asked_kind: &str, turn_end: &str, world: &World) {
    let socket = socket_path();
    let socket_arg = socket.display().to_string();
    let mut args = vec!["--listen", socket_arg.as_str(), "--linger", "1", "--trusted"];
    args.extend_from_slice(extra);
    let mut sidecar = Sidecar::spawn(&args, &world.env(), world.path("shared.err"));
    assert_eq!(sidecar.raw_line(LONG), format!("listening on {}", socket.display()));
    let mut a = Peer::connect(&socket, world.path("shared.err"));
    let mut b = Peer::connect(&socket, world.path("shared.err"));
    a.ok("bb.init", json!({}));
    b.ok("bb.init", json!({}));
    a.wait_event(LONG, "the engine connected", |m| {
        m["topic"] == "bb/connection" && m["payload"]["status"] == "connected"
    });
    let session = a.ok("bb.createSession", json!({"tabId": "tab-a"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    b.ok("bb.selectSession", json!({"sessionId": session, "tabId": "tab-b"}));
    a.ok("bb.sendMessage", json!({"sessionId": session, "text": text}));
    let request = asked(&mut a, &session, asked_kind);
    assert_eq!(asked(&mut b, &session, asked_kind), request, "both windows get the card");

    a.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": "allow_once"}),
    );
    for (peer, tab) in [(&mut a, "tab-a"), (&mut b, "tab-b")] {
        let (shown_on, item) = closed(peer, &request);
        assert_eq!(shown_on, tab);
        assert_eq!(item["class"], "permission.response", "{item}");
        assert_eq!(item["payload"]["decision"], "allow_once", "{item}");
        assert_eq!(item["payload"]["answeredBy"]["tabId"], "tab-a", "{item}");
        assert!(item["payload"]["answeredBy"]["connection"].is_u64(), "{item}");
    }
    let late = b.call(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": "deny"}),
    );
    assert_eq!(late["error"]["code"], "permission_not_pending", "{late}");
    let message = late["error"]["message"].as_str().unwrap();
    assert!(message.contains("first answer won: allow_once from tab tab-a"), "{message}");
    for peer in [&mut a, &mut b] {
        peer.session_events_until(&session, turn_end, LONG);
    }
    a.disconnect();
    b.disconnect();
    assert!(sidecar.wait_exit(Duration::from_secs(60)).success(), "{}", sidecar.stderr());
    let _ = std::fs::remove_dir_all(socket.parent().unwrap());
}

#[test]
fn two_windows_on_the_demo_engine_first_answer_wins() {
    let world = World::new();
    let project = world.path("project").display().to_string();
    let extra = ["--workspace", project.as_str()];
    first_answer_wins(&extra, "Add a Makefile", "permission_request", "run_finished", &world);
}

#[test]
fn two_windows_on_real_kilo_first_answer_wins() {
    let Some(bin) = kilo_bin_or_skip() else { return };
    let world = World::new();
    let _mock = world.start_mock_llm("ask", "ask");
    let project = world.path("project").display().to_string();
    let bin = bin.display().to_string();
    let extra = ["--workspace", project.as_str(), "--engine", "kilo", "--engine-bin", bin.as_str()];
    let text = "Run it MOCK:bash:echo%20shared77";
    first_answer_wins(&extra, text, "permission.asked", "session.turn.close", &world);
}
