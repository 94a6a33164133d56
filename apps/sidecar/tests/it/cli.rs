//! Starting up as a user meets it: the usage line shows where `--workspace` is optional and
//! where it is required; a missing or non-directory `--workspace` is said once with what to
//! do; the README's stdio example (`printf '<init>\n<createSession>\n' | bb-sidecar`) shows a
//! streamed turn: at the end of its input the sidecar still streams the turn that runs, for
//! a bounded time.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::World;

#[test]
fn the_usage_line_shows_where_the_workspace_is_optional() {
    let out = Command::new(env!("CARGO_BIN_EXE_bb-sidecar")).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let usage = help.split("Usage: ").nth(1).unwrap().split("\n\n").next().unwrap();
    assert!(
        usage.contains("bb-sidecar [--workspace <DIR>] [--folder <DIR>]... [OPTIONS]"),
        "{usage}"
    );
    assert!(usage.contains("bb-sidecar --workspace <DIR> --engine kilo"), "required: {usage}");
    assert!(usage.contains("--engine acp [OPTIONS] -- <AGENT_COMMAND>..."), "{usage}");
}

#[test]
fn a_workspace_that_is_missing_or_a_file_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    for (path, why) in [(dir.path().join("missing"), "does not exist"), (file, "is a file")] {
        let out = Command::new(env!("CARGO_BIN_EXE_bb-sidecar"))
            .arg("--workspace")
            .arg(&path)
            .stdin(Stdio::null())
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{path:?} was accepted");
        assert!(out.stdout.is_empty(), "nothing served");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.matches(why).count(), 1, "said once: {stderr}");
        assert!(!stderr.contains("Caused by"), "said twice: {stderr}");
        assert!(stderr.contains("pass --workspace an existing directory"), "{stderr}");
    }
}

/// Two lines and the end of input, as the README's example pipes them: the demo turn the
/// session's task starts streams to its permission prompt, then the sidecar exits 0 within
/// the end-of-input grace.
#[test]
fn the_readme_stdio_example_shows_a_streamed_turn() {
    let world = World::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bb-sidecar"))
        .arg("--workspace")
        .arg(world.path("project"))
        .env_clear()
        .envs(world.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            concat!(
                r#"{"v":1,"kind":"req","id":"1","method":"bb.init"}"#,
                "\n",
                r#"{"v":1,"kind":"req","id":"2","method":"bb.createSession","params":{"task":"hello"}}"#,
                "\n"
            )
            .as_bytes(),
        )
        .unwrap();
    drop(stdin);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    let types: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["topic"] == "bb/events")
        .flat_map(|m| m["payload"]["events"].as_array().unwrap().clone())
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .collect();
    for wanted in ["user_message", "assistant.message.delta", "tool_call", "permission_request"] {
        assert!(types.iter().any(|t| t == wanted), "{wanted} streamed: {types:?}");
    }
}

/// The C math library is not loaded: the two functions the sidecar calls from it are its own
/// (`apps/sidecar/src/math.rs`), and loading the library would keep ~0.3 MB of its code
/// resident for nothing. A dependency that starts calling another C math function fails this
/// test: define that function there too, or accept the memory and say so in BENCHMARKS.md.
#[test]
fn the_sidecar_loads_no_c_math_library() {
    let world = World::new();
    let project = world.path("project");
    let mut sidecar = crate::harness::Sidecar::spawn(
        &["--workspace", project.to_str().unwrap(), "--engine", "demo"],
        &world.env(),
        world.path("sidecar.log"),
    );
    sidecar.ok("bb.init", serde_json::json!({}));
    let pid = sidecar.child.id();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    assert!(maps.contains("libc.so"), "the maps are read: {maps}");
    let math: Vec<&str> =
        maps.lines().filter(|l| l.contains("/libm.so") || l.contains("/libm-")).collect();
    assert!(math.is_empty(), "libm is mapped: {math:?}");
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(30)).success());
}
