//! The sidebar page in Debian's Chromium, driven by playwright-core (`tests/browser/`):
//! open, create a session, stream, approve, stop, reload and restore, two pages without
//! cross-talk, a wrong token and a foreign Origin refused. Screenshots go to
//! `target/browser-shots/`. `scripts/test.sh` installs Chromium and playwright-core.

use std::path::PathBuf;
use std::process::Command;

use crate::harness::{Gateway, repo_root};

/// What the browser test needs, or why it cannot run (with what to do).
fn prerequisites() -> Result<(PathBuf, PathBuf), String> {
    let dir = repo_root().join("apps/gateway/tests/browser");
    if !dir.join("node_modules/playwright-core").is_dir() {
        return Err(format!(
            "playwright-core is not installed: run `npm ci --prefix {}` (scripts/test.sh does)",
            dir.display()
        ));
    }
    let chromium = std::env::var_os("BB_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if !chromium.is_file() {
        return Err(format!(
            "no Chromium at {}: `apt-get install -y chromium` (scripts/test.sh does) or set BB_CHROMIUM",
            chromium.display()
        ));
    }
    Ok((dir, chromium))
}

#[test]
fn the_sidebar_page_works_in_a_real_browser() {
    let (dir, chromium) = match prerequisites() {
        Ok(found) => found,
        Err(why) if std::env::var("BB_SKIP_BROWSER").is_ok_and(|v| v == "1") => {
            eprintln!("BB_SKIP_BROWSER=1: not running the browser test ({why})");
            return;
        }
        Err(why) => panic!("{why}; BB_SKIP_BROWSER=1 opts out explicitly"),
    };
    // Trusted: the page approves the demo's edit.
    let gw = Gateway::start(&["--trusted"]);
    let shots = repo_root().join("target/browser-shots");
    let out = Command::new("node")
        .arg(dir.join("smoke.mjs"))
        .arg(gw.url())
        .arg(&shots)
        .env("BB_CHROMIUM", &chromium)
        .current_dir(&dir)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "the browser test failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("all browser checks passed"), "{stdout}");
    assert!(shots.join("05-approved-and-finished.png").is_file());
}

/// The page's reducers and its bridge liveness watchdog (heartbeats; "not responding" after
/// two silent intervals, a reconnect after three), on node's mocked timers.
#[test]
fn the_page_reducers_and_liveness_hold_their_rules() {
    let dir = repo_root().join("apps/gateway/tests/browser");
    let out = Command::new("node")
        .args(["--test", "store.test.mjs", "liveness.test.mjs"])
        .current_dir(&dir)
        .output()
        .expect("node runs (it is needed for the page tests)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("# pass 9") && stdout.contains("# fail 0"), "{stdout}");
}
