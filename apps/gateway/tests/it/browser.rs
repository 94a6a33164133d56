//! The sidebar page in Debian's Chromium, driven by playwright-core (`tests/browser/`), as a
//! person uses it: on the demo engine (three turns in one session, approvals allowed and
//! denied, a stop, a reload, a dropped connection, a second tab opening the session, a delete
//! undone, a declared resync, a wrong token and a foreign Origin refused) and on the real
//! Kilo server with the mock LLM (a reply, a command allowed, one denied, a stop, a question,
//! a sub-agent's command allowed on its parent's tab, a reload, a second tab, a resync).
//! Screenshots go to `target/browser-shots/{demo,kilo}/`. `scripts/test.sh` installs Chromium
//! and playwright-core.

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

/// The browser test's directory and Chromium; `None` only when `BB_SKIP_BROWSER=1` opts
/// out explicitly (anything else missing fails, saying what to do).
pub(crate) fn browser_or_skip() -> Option<(PathBuf, PathBuf)> {
    match prerequisites() {
        Ok(found) => Some(found),
        Err(why) if std::env::var("BB_SKIP_BROWSER").is_ok_and(|v| v == "1") => {
            eprintln!("BB_SKIP_BROWSER=1: not running the browser test ({why})");
            None
        }
        Err(why) => panic!("{why}; BB_SKIP_BROWSER=1 opts out explicitly"),
    }
}

#[test]
fn the_sidebar_page_works_in_a_real_browser() {
    let Some((dir, chromium)) = browser_or_skip() else { return };
    // Trusted: the page approves the demo's edit.
    let gw = Gateway::start(&["--trusted"]);
    // A page that falls behind a two-message ring gets a declared resync.
    let small_ring = Gateway::start(&["--trusted", "--test-ring-messages", "2"]);
    let shots = repo_root().join("target/browser-shots/demo");
    let out = node(
        &dir,
        &chromium,
        &["smoke.mjs", &gw.url(), &small_ring.url()],
        &shots,
        &[&gw, &small_ring],
    );
    assert!(shots.join("08-reloaded.png").is_file());
    assert!(shots.join("15-resynced.png").is_file());
    assert!(out.contains("ok 11 second-tab-opened-the-session"), "{out}");
}

/// Paged attach: a tab that opens a session another tab played is sent its last turn (one
/// per resync and per page on this gateway) and fetches the older ones with "Show earlier".
#[test]
fn a_late_tab_pages_back_through_a_session_in_a_real_browser() {
    let Some((dir, chromium)) = browser_or_skip() else { return };
    let gw = Gateway::start(&["--test-history-turns", "1"]);
    let shots = repo_root().join("target/browser-shots/history");
    let out = node(&dir, &chromium, &["history.mjs", &gw.url()], &shots, &[&gw]);
    assert!(out.contains("whole-history") && out.contains("answered-from-the-late-tab"), "{out}");
}

/// Lines of each gateway's log shown when a browser script fails.
const LOG_TAIL: usize = 200;

/// Runs a browser script with `args` and the shots directory; its output, once it passed.
/// A failure also shows the end of each of `gateways`' logs (debug level), so a failure
/// seen once says what the bridge did.
fn node(
    dir: &std::path::Path,
    chromium: &std::path::Path,
    args: &[&str],
    shots: &std::path::Path,
    gateways: &[&Gateway],
) -> String {
    let _ = std::fs::remove_dir_all(shots);
    let out = Command::new("node")
        .args(args)
        .arg(shots)
        .env("BB_CHROMIUM", chromium)
        .current_dir(dir)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    if !out.status.success() {
        for (n, gw) in gateways.iter().enumerate() {
            let logs = gw.logs();
            let lines: Vec<&str> = logs.lines().collect();
            let tail = lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n");
            eprintln!("gateway {} log, last {LOG_TAIL} lines:\n{tail}", n + 1);
        }
        panic!("the browser test failed:\n{stdout}\n{stderr}");
    }
    assert!(stdout.contains("all browser checks passed"), "{stdout}");
    stdout
}

#[test]
fn the_sidebar_page_works_on_real_kilo() {
    let Some((dir, chromium)) = browser_or_skip() else { return };
    let Some(kilo) = bb_kilo::testing::kilo_bin_or_skip() else { return };
    let world = bb_kilo::testing::KiloWorld::new();
    let _mock = world.start_mock_llm(std::time::Duration::from_millis(40), "ask", "ask");
    let kilo = kilo.display().to_string();
    // A four-message ring: a reload and a hidden tab are rebuilt by declared resyncs.
    let gw = Gateway::start_with(
        &["--engine", "kilo", "--engine-bin", &kilo, "--trusted", "--test-ring-messages", "4"],
        &world.env(),
    );
    let shots = repo_root().join("target/browser-shots/kilo");
    let out = node(&dir, &chromium, &["kilo.mjs", &gw.url()], &shots, &[&gw]);
    assert!(shots.join("01-opened.png").is_file());
    assert!(out.contains("turn6-sub-agent-approval") && out.contains("resynced"), "{out}");
}

/// The page's reducers, its bridge liveness watchdog (heartbeats; "not responding" after two
/// silent intervals, a reconnect after three, on node's mocked timers) and its prompt-box
/// commands, question forms and usage words.
#[test]
fn the_page_reducers_and_liveness_hold_their_rules() {
    let dir = repo_root().join("apps/gateway/tests/browser");
    let out = Command::new("node")
        .args(["--test", "store.test.mjs", "liveness.test.mjs", "controls.test.mjs"])
        .current_dir(&dir)
        .output()
        .expect("node runs (it is needed for the page tests)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("# pass 15") && stdout.contains("# fail 0"), "{stdout}");
}
