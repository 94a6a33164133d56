//! WebSocket conformance of the server side: Autobahn's fuzzingclient cases 1–10 (no
//! compression) run by `kosoku` against the gateway's `/echo` route. `scripts/test.sh`
//! installs kosoku in `target/tools/kosoku`; reports go to `target/kosoku/`.

use std::path::PathBuf;
use std::process::Command;

use crate::harness::{Gateway, repo_root};

#[test]
fn autobahn_cases_1_to_10_pass() {
    let kosoku = std::env::var_os("BB_KOSOKU")
        .map_or_else(|| repo_root().join("target/tools/kosoku/bin/kosoku"), PathBuf::from);
    if !kosoku.is_file() {
        let why = format!(
            "kosoku is not installed at {}: `python3 -m venv target/tools/kosoku && \
             target/tools/kosoku/bin/pip install kosoku` (scripts/test.sh does) or set BB_KOSOKU",
            kosoku.display()
        );
        if std::env::var("BB_SKIP_CONFORMANCE").is_ok_and(|v| v == "1") {
            eprintln!("BB_SKIP_CONFORMANCE=1: not running the conformance suite ({why})");
            return;
        }
        panic!("{why}; BB_SKIP_CONFORMANCE=1 opts out explicitly");
    }
    let gw = Gateway::start(&["--echo-route"]);
    let report = repo_root().join("target/kosoku");
    let out = Command::new(&kosoku)
        .args(["-m", "fuzzingclient"])
        .arg(gw.ws_url("/echo", &gw.token))
        .args(["-x", "12.*", "-x", "13.*", "-o"])
        .arg(&report)
        .output()
        .expect("kosoku runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stdout.lines().rev().take(15).collect();
    println!("{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    assert!(out.status.success(), "conformance failures:\n{stdout}\n{stderr}");
    // Kosoku really ran the cases (not an empty selection).
    assert!(
        stdout.contains("OK") || std::fs::read_dir(&report).is_ok_and(|mut d| d.next().is_some()),
        "{stdout}"
    );
}
