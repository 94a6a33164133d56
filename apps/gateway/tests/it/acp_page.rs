//! The sidebar page on `bb-gateway --engine acp` in Debian's Chromium (`tests/browser/acp.mjs`):
//! on `fixtures/acp/capable_agent.py` (a model picked, which the agent is told with
//! `session/set_config_option` and the next session starts with; the `/` menu listed, filtered,
//! picked with the keyboard and a command sent; usage and the plan shown; a form of seven
//! fields answered at once; a tab closed with `session/close` and the agent's late update never
//! shown) and on the real `kilo acp` with the mock LLM (its model and mode pickers, a turn on the
//! model picked, its `/` menu, a tab closed). Screenshots under
//! `target/browser-shots/acp-{capable,kilo}/`.

use std::process::Command;

use serde_json::Value;

use crate::browser::browser_or_skip;
use crate::harness::{Gateway, repo_root};

/// Runs `acp.mjs` against `gw` for `agent`; its output, once it passed.
fn page_on(gw: &Gateway, agent: &str) -> String {
    let Some((dir, chromium)) = browser_or_skip() else { return String::new() };
    let shots = repo_root().join(format!("target/browser-shots/acp-{agent}"));
    let _ = std::fs::remove_dir_all(&shots);
    let out = Command::new("node")
        .arg("acp.mjs")
        .arg(gw.url())
        .arg(&shots)
        .arg(agent)
        .env("BB_CHROMIUM", &chromium)
        .current_dir(&dir)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("all browser checks passed"),
        "the browser test failed:\n{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        gw.logs()
    );
    assert!(shots.join("01-model-picked.png").is_file());
    stdout
}

/// The frames the capable agent logged (`--log`): what it read and wrote.
fn frames(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|f| f["msg"].clone())
        .collect()
}

#[test]
fn the_page_drives_a_capable_acp_agent() {
    let script = repo_root().join("fixtures/acp/capable_agent.py");
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("frames.jsonl");
    let gw = Gateway::start(&[
        "--engine",
        "acp",
        "--",
        "python3",
        script.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    let out = page_on(&gw, "capable");
    if out.is_empty() {
        return;
    }
    let read = frames(&log);
    let method = |m: &'static str| read.iter().filter(move |f| f["method"] == m);
    // The picker's choice reached the agent, and the next session started with it.
    let sets: Vec<&Value> = method("session/set_config_option").map(|f| &f["params"]).collect();
    assert!(
        sets.iter().any(|p| p["configId"] == "model" && p["value"] == "fake/b"),
        "the model picked: {sets:#?}"
    );
    let firsts: Vec<String> = method("session/new")
        .filter_map(|f| read.iter().find(|r| r["id"] == f["id"] && r.get("result").is_some()))
        .filter_map(|r| r["result"]["sessionId"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(firsts.len(), 2, "two sessions: {firsts:?}");
    assert!(
        sets.iter().any(|p| p["sessionId"] == firsts[1].as_str() && p["value"] == "fake/b"),
        "the second session started on the remembered model: {sets:#?}"
    );
    // The `/` menu's command ran as the agent runs commands: a prompt `/review the diff`.
    let prompts: Vec<String> = method("session/prompt")
        .filter_map(|f| f["params"]["prompt"][0]["text"].as_str().map(str::to_owned))
        .collect();
    assert!(prompts.iter().any(|p| p == "/review the diff"), "{prompts:?}");
    // The closed tab closed its session.
    let closed: Vec<&str> =
        method("session/close").filter_map(|f| f["params"]["sessionId"].as_str()).collect();
    assert_eq!(closed, [firsts[1].as_str()], "session/close of the closed tab");
    assert!(out.contains(&format!("closed {}", firsts[1])), "{out}");
}

#[test]
fn the_page_drives_the_real_kilo_acp() {
    let kilo = bb_kilo::testing::kilo_bin();
    let world = bb_kilo::testing::KiloWorld::new();
    let _mock = world.start_mock_llm(std::time::Duration::from_millis(40), "ask", "ask");
    let mut env = vec![("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())];
    env.extend(world.env());
    let gw = Gateway::start_with(&["--engine", "acp", "--", kilo.to_str().unwrap(), "acp"], &env);
    let out = page_on(&gw, "kilo");
    if out.is_empty() {
        return;
    }
    assert!(out.contains("usage-on-the-picked-model") && out.contains("tab-closed"), "{out}");
}
