//! The heartbeat toward the webview through the binary: every ready connection (stdio, and
//! each client of `--listen`) gets `bb/connection` with `heartbeat: 5000` every 5 s, also
//! while it says it is hidden, so a webview can tell a silent bridge from a dead one.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{LONG, Peer, Sidecar, World};

/// Two intervals and a margin for a loaded machine: the window in which two beats must come.
const TWO_BEATS: Duration = Duration::from_secs(13);

/// The heartbeats `peer` reads within `within` (reading everything else on the way).
fn beats(peer: &mut Peer, within: Duration, want: usize) -> Vec<Value> {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    while got.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "{} of {want} heartbeats within {within:?}", got.len());
        let beat = peer.wait_event(left, "a heartbeat", |m| {
            m["topic"] == "bb/connection" && m["payload"]["heartbeat"].is_u64()
        });
        got.push(beat["payload"].clone());
    }
    got
}

fn check(beat: &Value) {
    assert_eq!(beat["heartbeat"], 5000, "{beat}");
    assert_eq!(beat["status"], "connected", "the demo engine is up: {beat}");
    assert!(beat.get("gapDetected").is_none() && beat.get("sessionId").is_none(), "{beat}");
}

#[test]
fn stdio_heartbeats_every_interval_also_while_hidden() {
    let world = World::new();
    let workspace = world.path("project").display().to_string();
    let mut sidecar =
        Sidecar::spawn(&["--workspace", &workspace], &world.env(), world.path("hb.err"));
    sidecar.ok("bb.init", json!({}));
    for beat in beats(&mut sidecar, TWO_BEATS, 2) {
        check(&beat);
    }
    sidecar.ok("bb.visibility", json!({"visible": false}));
    check(&beats(&mut sidecar, TWO_BEATS, 1)[0]);
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(LONG).success());
}

#[test]
fn every_listen_client_gets_heartbeats() {
    let world = World::new();
    let workspace = world.path("project").display().to_string();
    let dir = std::env::temp_dir().join(format!("bb-hb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("bridge.sock");
    let socket_arg = socket.display().to_string();
    let mut sidecar = Sidecar::spawn(
        &["--listen", &socket_arg, "--linger", "1", "--workspace", &workspace],
        &world.env(),
        world.path("hb.err"),
    );
    assert_eq!(sidecar.raw_line(LONG), format!("listening on {}", socket.display()));
    let mut a = Peer::connect(&socket, world.path("hb.err"));
    let mut b = Peer::connect(&socket, world.path("hb.err"));
    a.ok("bb.init", json!({}));
    b.ok("bb.init", json!({}));
    for peer in [&mut a, &mut b] {
        for beat in beats(peer, TWO_BEATS, 2) {
            check(&beat);
        }
    }
    a.disconnect();
    b.disconnect();
    assert!(sidecar.wait_exit(LONG).success(), "{}", sidecar.stderr());
    let _ = std::fs::remove_dir_all(&dir);
}
