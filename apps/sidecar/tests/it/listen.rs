//! `bb-sidecar --listen PATH --linger SECS` through the binary: clients of its Unix socket are
//! webview connections of the one runtime; a client that reconnects within the linger period
//! re-attaches its tab with `lastSeen` and carries a running turn on (the demo engine and the
//! real Kilo server); one sidecar per path; after the linger the sidecar exits and nothing it
//! started is left.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{
    LONG, Peer, Sidecar, World, engine_tool, eventually, is_dead, kilo_bin_or_skip, messages_until,
};

/// A `--listen` sidecar and its socket, once it said it listens.
fn listening(world: &World, extra: &[&str], linger: &str) -> (Sidecar, PathBuf) {
    // Not under the world's (long) temporary path: a socket path has a length limit.
    let socket = short_socket_path(world);
    let socket_arg = socket.display().to_string();
    let mut args = vec!["--listen", socket_arg.as_str(), "--linger", linger];
    args.extend_from_slice(extra);
    let mut sidecar = Sidecar::spawn(&args, &world.env(), world.path("listen.err"));
    let line = sidecar.raw_line(LONG);
    assert_eq!(line, format!("listening on {}", socket.display()), "{}", sidecar.stderr());
    (sidecar, socket)
}

fn short_socket_path(world: &World) -> PathBuf {
    let dir = world.path("s");
    if dir.as_os_str().len() < 80 {
        return dir.join("bridge.sock");
    }
    let unique = format!("/tmp/bb-listen-{}-{}", std::process::id(), rand_suffix());
    PathBuf::from(unique).join("bridge.sock")
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

fn connect(world: &World, socket: &Path) -> Peer {
    Peer::connect(socket, world.path("listen.err"))
}

fn seqs(messages: &[Value]) -> Vec<u64> {
    messages.iter().map(|m| m["seq"].as_u64().expect("a seq")).collect()
}

fn event_ids(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| m["events"].as_array().unwrap().iter())
        .map(|e| e["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// An engine set-up that cannot work (here: a Kilo binary that does not exist) fails before
/// the sidecar says it listens: it exits 1 with nothing on stdout and the reason on stderr,
/// so the caller (the VS Code extension) reports it rather than connecting to a socket that
/// is about to close and starting the same failing sidecar again.
#[test]
fn a_set_up_that_cannot_serve_exits_before_it_says_it_listens() {
    let world = World::new();
    let socket = short_socket_path(&world);
    let workspace = world.path("project").display().to_string();
    let missing = world.path("no-such-kilo").display().to_string();
    let args = ["--engine", "kilo", "--engine-bin", &missing, "--workspace", &workspace];
    let out = Command::new(env!("CARGO_BIN_EXE_bb-sidecar"))
        .args(["--listen", socket.to_str().unwrap(), "--linger", "5"])
        .args(args)
        .envs(world.env())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "nothing said on stdout");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no-such-kilo") && stderr.contains("--engine-bin"), "{stderr}");
}

/// Demo engine: the socket is the owner's only (0600), a second sidecar on the path says who
/// serves it and exits 0, two clients are served at once, a client that went away mid-turn
/// is replaced within the linger by one that re-attaches the tab from `lastSeen` and finishes
/// the turn (nothing twice, nothing missing), and with no client left the sidecar exits
/// after the linger and removes its socket.
#[test]
fn clients_come_and_go_and_the_sidecar_lingers_then_exits() {
    let world = World::new();
    let workspace = world.path("project").display().to_string();
    let (mut sidecar, socket) = listening(&world, &["--workspace", &workspace], "3");
    let meta = std::fs::symlink_metadata(&socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "the socket is the owner's only");

    // A second sidecar on the same path: says who serves it, exits 0, starts nothing.
    let second = Command::new(env!("CARGO_BIN_EXE_bb-sidecar"))
        .args(["--listen", socket.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(second.status.success(), "{second:?}");
    let said = String::from_utf8_lossy(&second.stdout);
    let owner = sidecar.child.id();
    assert_eq!(
        said.trim(),
        format!("already serving {} (pid {owner}); connect to it", socket.display())
    );

    let mut a = connect(&world, &socket);
    a.ok("bb.init", json!({"workspaceTrusted": true}));
    let created = a.ok("bb.createSession", json!({"tabId": "tab-a"}));
    let session = created["sessionId"].as_str().unwrap().to_owned();
    a.ok("bb.sendMessage", json!({"sessionId": session, "text": "Add a Makefile"}));
    // The turn waits for the permission decision: it is running when the client leaves.
    let before = messages_until(&mut a, Some(&session), "permission_request");
    let last = *seqs(&before).last().unwrap();
    let request = before
        .iter()
        .flat_map(|m| m["events"].as_array().unwrap().iter())
        .find(|e| e["type"] == "permission_request")
        .unwrap()["payload"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    a.disconnect();

    // Within the linger: a new client re-attaches the tab; a third is served alongside.
    std::thread::sleep(Duration::from_millis(500));
    let mut b = connect(&world, &socket);
    let mut c = connect(&world, &socket);
    b.ok("bb.init", json!({"lastSeen": {"tab-a": last}}));
    let listed = c.ok("bb.listSessions", json!({}));
    assert!(listed["sessions"].as_array().unwrap().iter().any(|s| s["sessionId"] == session));
    let decided = b.ok(
        "bb.approvePermission",
        json!({"sessionId": session, "requestId": request, "decision": "allow_once"}),
    );
    assert_eq!(decided["sessionId"], session.as_str());
    let after = messages_until(&mut b, Some(&session), "run_finished");
    assert!(after.iter().all(|m| m["tabId"] == "tab-a"));
    let all: Vec<u64> = seqs(&before).into_iter().chain(seqs(&after)).collect();
    assert_eq!(all, (1..=all.len() as u64).collect::<Vec<_>>(), "one tab, nothing twice or lost");
    let ids = event_ids(&before).into_iter().chain(event_ids(&after)).collect::<Vec<_>>();
    let distinct: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "an event delivered twice: {ids:?}");
    let text: String = after
        .iter()
        .flat_map(|m| m["events"].as_array().unwrap().iter())
        .filter(|e| e["type"] == "assistant.message.delta")
        .filter_map(|e| e["payload"]["delta"].as_str())
        .collect();
    assert!(text.ends_with("Run `make` to try it."), "the rest of the turn: {text:?}");
    // The tab-less client is shown none of the tab's session.
    c.ok("bb.listSessions", json!({}));
    assert!(
        !c.seen.iter().any(|l| l.contains("\"topic\":\"bb/events\"")),
        "a session shown on a tab reached another client"
    );

    b.disconnect();
    c.disconnect();
    let left = Instant::now();
    let status = sidecar.wait_exit(Duration::from_secs(30));
    assert!(status.success(), "exit {status}; log:\n{}", sidecar.stderr());
    assert!(left.elapsed() >= Duration::from_secs(2), "it lingered: {:?}", left.elapsed());
    assert!(!socket.exists(), "the socket is removed");
    assert!(sidecar.stderr().contains("no client for the linger period"), "{}", sidecar.stderr());
}

/// With no client at all, the linger runs from the start; SIGTERM ends it at once.
#[test]
fn an_unused_sidecar_exits_after_its_linger_and_sigterm_stops_it_sooner() {
    let world = World::new();
    let (mut idle, socket) = listening(&world, &[], "1");
    let status = idle.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "{}", idle.stderr());
    assert!(!socket.exists());

    let (mut sidecar, socket) = listening(&world, &[], "600");
    let mut client = connect(&world, &socket);
    client.ok("bb.init", json!({}));
    // SAFETY: signalling our own child process.
    let rc = unsafe { libc::kill(i32::try_from(sidecar.child.id()).unwrap(), libc::SIGTERM) };
    assert_eq!(rc, 0);
    let status = sidecar.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "{}", sidecar.stderr());
    assert!(!socket.exists());
}

/// The real Kilo server: a turn streaming when its client disconnects goes on; a client that
/// connects within the linger re-attaches the tab from `lastSeen` and gets the rest to the
/// turn's end (every delta once: the text is whole). Then, with a shell tool of the engine
/// running (`sleep 600`, detached by the engine) and no client, the sidecar exits after the
/// linger and the engine and its tool are gone.
#[test]
fn a_running_kilo_turn_survives_a_reconnect_and_nothing_outlives_the_linger() {
    let Some(bin) = kilo_bin_or_skip() else { return };
    let world = World::new();
    let _mock = world.start_mock_llm_with_delay("allow", "ask", Duration::from_millis(150));
    let project = world.path("project").display().to_string();
    let extra =
        ["--workspace", &project, "--engine", "kilo", "--engine-bin", bin.to_str().unwrap()];
    let (mut sidecar, socket) = listening(&world, &extra, "4");
    let engine = sidecar.engine_pid();

    let mut a = connect(&world, &socket);
    a.ok("bb.init", json!({}));
    a.wait_event(LONG, "bb/connection connected", |m| {
        m["topic"] == "bb/connection" && m["payload"]["status"] == "connected"
    });
    let created = a.ok("bb.createSession", json!({"tabId": "tab-k"}));
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let words: Vec<String> = (1..=40).map(|i| format!("w{i}")).collect();
    let prompt = format!("MOCK:text:{}", words.join("%20"));
    a.ok("bb.sendMessage", json!({"sessionId": session, "text": prompt}));
    let mut before = Vec::new();
    loop {
        let m = a.wait_event(LONG, "the first streamed delta", |m| {
            m["topic"] == "bb/events" && m["payload"]["sessionId"] == session.as_str()
        });
        let delta = m["payload"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "message.part.delta");
        before.push(m["payload"].clone());
        if delta {
            break;
        }
    }
    let last = *seqs(&before).last().unwrap();
    a.disconnect();
    std::thread::sleep(Duration::from_secs(1));

    let mut b = connect(&world, &socket);
    b.ok("bb.init", json!({"lastSeen": {"tab-k": last}}));
    let after = messages_until(&mut b, Some(&session), "session.turn.close");
    let all: Vec<u64> = seqs(&before).into_iter().chain(seqs(&after)).collect();
    assert_eq!(all, (1..=all.len() as u64).collect::<Vec<_>>(), "one tab, nothing twice or lost");
    let text: String = before
        .iter()
        .chain(&after)
        .flat_map(|m| m["events"].as_array().unwrap().iter())
        .filter(|e| e["type"] == "message.part.delta" && e["payload"]["field"] == "text")
        .filter_map(|e| e["payload"]["delta"].as_str())
        .collect();
    assert_eq!(text.split_whitespace().collect::<Vec<_>>(), words, "the whole reply, once");
    let streamed_after = after
        .iter()
        .flat_map(|m| m["events"].as_array().unwrap().iter())
        .any(|e| e["type"] == "message.part.delta");
    assert!(streamed_after, "the turn was still streaming when the first client left");

    // A detached shell tool of the engine, then no client: nothing outlives the linger.
    b.ok("bb.sendMessage", json!({"sessionId": session, "text": "Wait MOCK:bash:sleep%20600"}));
    let reaper = engine_tool(engine, "sleep 600");
    let tool = reaper.0;
    b.disconnect();
    let status = sidecar.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "exit {status}; log:\n{}", sidecar.stderr());
    eventually(Duration::from_secs(10), "the engine to be gone", || is_dead(engine));
    eventually(Duration::from_secs(10), "the engine's tool to be gone", || is_dead(tool));
    assert!(!socket.exists());
}
