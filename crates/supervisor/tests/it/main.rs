//! The spawner against real processes: environment allow-list and secret handling, redacted
//! and capped output, group shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;

use std::time::Duration;

use bb_supervisor::tokio_spawner::{MARKER_VAR, TokioSpawner};
use bb_supervisor::{EngineProcess, OutputLine, ProcessSpawner, SpawnSpec};
use secrecy::SecretString;

fn sh(script: &str, env: &[(&str, &str)], secret: Option<&str>) -> SpawnSpec {
    SpawnSpec {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        cwd: std::env::temp_dir(),
        env: env.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect(),
        secret_env: secret
            .map(|s| ("KILO_SERVER_PASSWORD".to_owned(), SecretString::from(s)))
            .into_iter()
            .collect(),
    }
}

async fn all_lines(p: &mut Box<dyn EngineProcess>) -> Vec<OutputLine> {
    let mut out = Vec::new();
    while let Some(line) =
        tokio::time::timeout(Duration::from_secs(20), p.next_line()).await.unwrap()
    {
        out.push(line);
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().next().map(str::to_owned))
        })
        .is_some_and(|state| state != "Z" && state != "X")
}

#[tokio::test]
async fn the_child_gets_exactly_its_env_and_the_secret_is_redacted() {
    let spawner = TokioSpawner::default();
    let path = std::env::var("PATH").unwrap();
    let spec = sh(
        "env; echo \"pw is $KILO_SERVER_PASSWORD\"",
        &[("PATH", &path), ("XDG_DATA_HOME", "/d")],
        Some("hunter2-secret"),
    );
    let mut p = spawner.spawn(spec).unwrap();
    let lines = all_lines(&mut p).await;
    let status = p.wait().await.unwrap();
    assert_eq!(status.code, Some(0));
    let names: Vec<&str> =
        lines.iter().filter_map(|l| l.text.split_once('=').map(|(k, _)| k)).collect();
    // What sh adds itself (PWD, SHLVL, _) and the guard's marker aside, nothing but what was
    // given.
    for name in &names {
        assert!(
            ["PATH", "XDG_DATA_HOME", "KILO_SERVER_PASSWORD", "PWD", "SHLVL", "_", MARKER_VAR]
                .contains(name),
            "unexpected {name}"
        );
    }
    assert!(names.contains(&MARKER_VAR));
    assert!(names.contains(&"KILO_SERVER_PASSWORD"));
    assert!(
        lines.iter().all(|l| !l.text.contains("hunter2-secret")),
        "secret in output: {lines:?}"
    );
    assert!(lines.iter().any(|l| l.text == "pw is [REDACTED]"));
}

#[tokio::test]
async fn long_lines_are_capped() {
    let spawner = TokioSpawner::with_max_line(100);
    let mut p = spawner
        .spawn(sh("head -c 5000 /dev/zero | tr '\\0' x; echo; echo short", &[], None))
        .unwrap();
    let lines = all_lines(&mut p).await;
    assert_eq!(lines.len(), 2);
    assert!(lines[0].text.starts_with(&"x".repeat(100)));
    assert!(lines[0].text.ends_with("[4900 bytes truncated]"), "{}", lines[0].text);
    assert_eq!(lines[1].text, "short");
}

#[tokio::test]
async fn terminate_stops_the_whole_group() {
    let spawner = TokioSpawner::default();
    let mut p = spawner.spawn(sh("sleep 300 & echo \"child $!\"; wait", &[], None)).unwrap();
    let line = tokio::time::timeout(Duration::from_secs(10), p.next_line()).await.unwrap().unwrap();
    let grandchild: u32 = line.text.strip_prefix("child ").unwrap().parse().unwrap();
    assert!(alive(grandchild));
    let status = p.terminate(Duration::from_secs(5)).await.unwrap();
    assert_eq!(status.signal, Some(libc::SIGTERM));
    for _ in 0..100 {
        if !alive(grandchild) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the engine's own child {grandchild} outlived the shutdown");
}

/// A process the engine started in a session of its own (as Kilo starts its shell tools) is
/// out of reach of the group signal; the guard's marker sweep ends it after the stop.
#[tokio::test]
async fn terminate_also_ends_a_detached_descendant() {
    let spawner = TokioSpawner::default();
    let path = std::env::var("PATH").unwrap();
    let script = "setsid sleep 300 & echo \"child $!\"; wait";
    let mut p = spawner.spawn(sh(script, &[("PATH", &path)], None)).unwrap();
    let line = tokio::time::timeout(Duration::from_secs(10), p.next_line()).await.unwrap().unwrap();
    let detached: u32 = line.text.strip_prefix("child ").unwrap().parse().unwrap();
    let _reaper = KillOnDrop(detached);
    for _ in 0..100 {
        if session_of(detached) == Some(detached) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(session_of(detached), Some(detached), "not detached");
    p.terminate(Duration::from_secs(5)).await.unwrap();
    for _ in 0..200 {
        if !alive(detached) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the engine's detached child {detached} outlived the shutdown");
}

/// The session id from `/proc/PID/stat`.
fn session_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(3)?.parse().ok()
}

/// Kills a process a failed assertion left behind.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if alive(self.0) {
            // SAFETY: a plain signal to the process this test started.
            unsafe { libc::kill(i32::try_from(self.0).unwrap(), libc::SIGKILL) };
        }
    }
}

#[tokio::test]
async fn a_child_ignoring_term_is_killed_after_the_grace() {
    let spawner = TokioSpawner::default();
    let mut p = spawner
        .spawn(sh("trap '' TERM; echo ready; while :; do sleep 0.05; done", &[], None))
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), p.next_line()).await.unwrap().unwrap();
    let status = p.terminate(Duration::from_millis(300)).await.unwrap();
    assert_eq!(status.signal, Some(libc::SIGKILL));
}
