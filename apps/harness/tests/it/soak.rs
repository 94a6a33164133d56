//! `bb-harness soak`, short: six sessions through the built `bb-sidecar` (stdio and two
//! `--listen` clients) and `bb-gateway` (two WebSocket windows) on the fake BreadBoard engine,
//! every fault kind injected at least once. Nothing lost or doubled, each approval told to
//! the engine once, the bridges' descriptors bounded. The binaries are the workspace's own,
//! beside `bb-harness` (a full `cargo nextest run --workspace` builds them); the soak bounds
//! its own waits, this test only how long it may run in all.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// A built binary of the workspace, beside `bb-harness`.
fn sibling(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_BIN_EXE_bb-harness")).with_file_name(name);
    assert!(
        path.is_file(),
        "{} is not built: run the workspace's tests (cargo nextest run --workspace) or \
         cargo build -p bb-sidecar -p bb-gateway first",
        path.display()
    );
    path
}

#[test]
#[allow(clippy::disallowed_methods)] // the test drives the real binaries
fn a_short_soak_with_every_fault_loses_and_doubles_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (sidecar, gateway) = (sibling("bb-sidecar"), sibling("bb-gateway"));
    let child = Command::new(env!("CARGO_BIN_EXE_bb-harness"))
        .args(["soak", "--sessions", "6", "--duration", "40", "--fault-every", "5"])
        .args(["--stall", "3", "--seed", "7", "--sidecar"])
        .arg(&sidecar)
        .arg("--gateway")
        .arg(&gateway)
        .arg("--dir")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // A watchdog, not a timed assertion: a soak that hangs is killed and fails below.
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if wait.recv_timeout(Duration::from_secs(600)).is_err() {
            // SAFETY: kill(2) on the soak's pid, which this test started.
            unsafe { libc::kill(i32::try_from(pid).unwrap(), libc::SIGKILL) };
        }
    });
    let out = child.wait_with_output().unwrap();
    drop(done);
    watchdog.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let logs = || {
        let mut all = String::from_utf8_lossy(&out.stderr).into_owned();
        for name in ["verdict.jsonl", "listen.log", "stdio.log", "gateway.log"] {
            let text = std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
            all.push_str(&format!("\n== {name}\n{text}"));
        }
        all
    };
    let summary: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no summary ({:?}): {stdout}\n{}", out.status, logs()));
    for (kind, n) in summary["faults"].as_object().unwrap() {
        assert!(n.as_u64() >= Some(1), "{kind} never injected: {summary}");
    }
    assert_eq!(summary["lost"], 0, "{summary}\n{}", logs());
    assert_eq!(summary["duplicated"], 0, "{summary}\n{}", logs());
    assert_eq!(summary["events"]["garbled"], 0, "{summary}");
    assert_eq!(summary["stuckTurns"], 0, "a turn never ended: {summary}\n{}", logs());
    assert!(summary["events"]["checked"].as_u64() > Some(500), "{summary}");
    let approvals = &summary["approvals"];
    assert!(approvals["answeredOnce"].as_u64() >= Some(3), "{summary}");
    assert_eq!(approvals["answeredTwice"], 0, "{summary}");
    assert_eq!(approvals["acceptedTwice"], 0, "{summary}");
    assert_eq!(approvals["stuck"], 0, "an approval never resolved: {summary}");
    assert!(summary["fdGrowth"].as_u64() <= Some(16), "{summary}");
    assert_eq!(summary["ok"], true, "{summary}");
    assert!(out.status.success(), "{:?}: {summary}", out.status);
}
