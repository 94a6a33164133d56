//! The command line: `--help` says what the gateway does today and lists the shared engine
//! flags; bad engine flags fail with a message that says what to do.

use std::process::Command;

#[test]
fn help_describes_the_gateway_and_every_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_bb-gateway")).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("WebSocket gateway"), "{help}");
    assert!(help.contains("prints one line with the URL to open"), "{help}");
    assert!(!help.contains("not built"), "{help}");
    for flag in [
        "--workspace",
        "--engine <KIND>",
        "--engine-bin",
        "--engine-url",
        "--engine-password-env",
        "--engine-token-env",
        "--state-dir",
        "--port",
        "--allow-origin",
        "--max-message-bytes",
        "--echo-route",
    ] {
        assert!(help.contains(flag), "{flag} in {help}");
    }
    assert!(help.contains("[default: demo]"), "the demo engine is the default: {help}");
}

#[test]
fn a_breadboard_engine_without_a_url_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_bb-gateway"))
        .args(["--engine", "breadboard"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "no URL line when nothing is served");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--engine breadboard needs --engine-url URL"), "{stderr}");
}

/// The engine is checked before the URL is printed: an engine executable that is not there
/// fails with what to do, and no link that cannot work is shown.
#[test]
fn an_engine_that_cannot_start_prints_no_url() {
    let workspace = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bb-gateway"))
        .args(["--engine", "kilo", "--engine-bin", "/nonexistent/kilo", "--workspace"])
        .arg(workspace.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "a URL was printed: {}", String::from_utf8_lossy(&out.stdout));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/kilo") && stderr.contains("--engine-bin"), "{stderr}");
}

/// A `--workspace` that is missing or a file is said once, with what to do, before any URL.
#[test]
fn a_workspace_that_is_not_a_directory_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    for (path, why) in [(dir.path().join("missing"), "does not exist"), (file, "is a file")] {
        let out = Command::new(env!("CARGO_BIN_EXE_bb-gateway"))
            .arg("--workspace")
            .arg(&path)
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(out.stdout.is_empty(), "no URL line");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.matches(why).count(), 1, "said once: {stderr}");
        assert!(!stderr.contains("Caused by"), "said twice: {stderr}");
        assert!(stderr.contains("pass --workspace an existing directory"), "{stderr}");
    }
}
