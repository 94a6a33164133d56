//! `bb-harness ingest`: the sidecar's event path replayed in process over real captures.
//! Every SSE event is counted, envelopes come out, `--repeat` replays the file as one longer
//! stream, and a missing file is a clear error.

use serde_json::Value;

use crate::run::{fixtures, output};

fn ingest(engine: &str, file: &str, repeat: &str) -> Value {
    ingest_with(engine, file, repeat, &[])
}

fn ingest_with(engine: &str, file: &str, repeat: &str, flags: &[&str]) -> Value {
    let path = fixtures().join(file);
    let mut args = vec!["ingest", "--engine", engine, "--repeat", repeat];
    args.extend(flags);
    args.push(path.to_str().unwrap());
    let out = output(&args, b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// Real captures of both engines: (engine, file under fixtures/).
const CAPTURES: [(&str, &str); 3] = [
    ("kilo", "engine/kilo/stream_text.sse"),
    ("kilo", "engine/kilo/permission_allow.sse"),
    ("breadboard", "engine/breadboard/replays/everything_showcase_v1/replay_all.sse"),
];

fn data_events(file: &str) -> u64 {
    let text = std::fs::read_to_string(fixtures().join(file)).unwrap();
    text.lines().filter(|l| l.starts_with("data:")).count() as u64
}

#[test]
fn every_event_of_a_capture_goes_through_and_envelopes_come_out() {
    for (engine, file) in CAPTURES {
        let report = ingest(engine, file, "1");
        assert_eq!(report["events"], data_events(file), "{file}: {report}");
        let published = report["published"].as_u64().unwrap();
        let bytes = report["bytesOut"].as_u64().unwrap();
        assert!(published > 0 && bytes > 100 * published, "{file}: {report}");
        assert!(report["eventsPerSec"].as_f64().unwrap() > 0.0, "{report}");
        for key in ["seconds", "cpuSeconds", "peakRssBytes"] {
            assert!(report[key].is_number(), "{key} in {report}");
        }
    }
}

#[test]
fn repeat_replays_the_capture_as_one_stream() {
    let file = "engine/kilo/stream_text.sse";
    let once = ingest("kilo", file, "1");
    let thrice = ingest("kilo", file, "3");
    assert_eq!(thrice["events"], 3 * data_events(file));
    assert!(thrice["bytesOut"].as_u64() > once["bytesOut"].as_u64(), "{once} {thrice}");
}

#[test]
fn the_stages_as_tasks_publish_what_they_publish_one_after_the_other() {
    // Time travels with the updates, so how the tasks interleave changes nothing.
    for (engine, file) in CAPTURES {
        let tasks = ingest(engine, file, "20");
        let serial = ingest_with(engine, file, "20", &["--serial"]);
        for key in ["events", "published", "bytesOut"] {
            assert_eq!(tasks[key], serial[key], "{file} {key}: {tasks} vs {serial}");
        }
    }
}

#[test]
fn a_missing_capture_is_a_clear_error() {
    let out = output(&["ingest", "--engine", "kilo", "/nonexistent/capture.sse"], b"");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("opening /nonexistent/capture.sse"), "{err}");
}

/// Runs `program args…` to completion; its stdout, or a failure naming what it said.
#[allow(clippy::disallowed_methods)] // the benchmark's own tools, as `benches/compare.sh` runs them
fn tool(program: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} could not be started ({e}): it must be installed"));
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{program} {args:?} failed:\n{stdout}\n{stderr}");
    stdout.into_owned()
}

#[test]
fn the_node_peer_sends_the_webview_what_the_bridge_sends() {
    // `benches/compare.sh` measures the bridge against the Node peer; the figure is only
    // worth something while both do the same work. Every Kilo capture cycled (sessions
    // created, deleted and created again), both outputs compared message by message.
    let root = fixtures().join("..");
    let dir = tempfile::tempdir().unwrap();
    let (capture, bridge, node) = (
        dir.path().join("kilo.sse"),
        dir.path().join("bridge.jsonl"),
        dir.path().join("node.jsonl"),
    );
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let benches = root.join("benches");
    tool(
        "python3",
        &[&path(&benches.join("make-capture.py")), "--events", "8000", &path(&capture)],
    );
    let out = output(
        &["ingest", "--engine", "kilo", "--serial", "--out", &path(&bridge), &path(&capture)],
        b"",
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let peer = benches.join("node-peer/peer.mjs");
    tool("node", &[&path(&peer), "--out", &path(&node), &path(&capture)]);
    let report =
        tool("python3", &[&path(&benches.join("check-peer.py")), &path(&bridge), &path(&node)]);
    assert!(report.contains("'bb/state'"), "{report}");
}
