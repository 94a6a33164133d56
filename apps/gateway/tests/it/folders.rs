//! A multi-root workspace through `bb-gateway --workspace A --folder B` (demo engine): over
//! the WebSocket `bb.init` lists both folders and a session is created in the one asked for;
//! `shell.openPath` opens paths of either folder and nothing outside them; in Chromium the page
//! offers the folder next to "New session" and creates the session in the folder picked.

use std::process::Command;

use serde_json::{Value, json};

use crate::harness::{Gateway, repo_root};

/// The canonical path of `path`, as the bridge lists it.
fn canonical(path: &std::path::Path) -> String {
    std::fs::canonicalize(path).unwrap().display().to_string()
}

#[tokio::test]
async fn two_folders_are_listed_and_a_session_is_created_in_the_one_asked_for() {
    let other = tempfile::tempdir().unwrap();
    let b = canonical(other.path());
    let gw = Gateway::start(&["--folder", &b]);
    let a = canonical(gw.workspace.path());
    let mut c = gw.connect().await;
    let mut events: Vec<Value> = Vec::new();
    let init = c.call("i", "bb.init", json!({}), &mut events).await;
    assert_eq!(init["result"]["folders"], json!([a, b]), "{init}");
    let created = c.call("c", "bb.createSession", json!({"folder": b}), &mut events).await;
    assert_eq!(created["result"]["folder"], b, "{created}");
    let refused = c.call("r", "bb.createSession", json!({"folder": "/"}), &mut events).await;
    assert_eq!(refused["error"]["code"], "folder_not_in_workspace", "{refused}");

    // Either folder's paths are the workspace's; a path outside both is refused.
    for (id, path, code) in [
        ("o1", format!("{b}/missing.txt"), "not_found"),
        ("o2", format!("{a}/missing.txt"), "not_found"),
        ("o3", "/etc/passwd".to_owned(), "path_outside_workspace"),
    ] {
        let res = c.call(id, "shell.openPath", json!({"path": path}), &mut events).await;
        assert_eq!(res["error"]["code"], code, "{path}: {res}");
    }
}

#[test]
fn the_page_offers_the_folder_when_it_creates_a_session() {
    let Some((dir, chromium)) = crate::browser::browser_or_skip() else { return };
    let other = tempfile::tempdir().unwrap();
    let b = canonical(other.path());
    let name = other.path().file_name().unwrap().to_str().unwrap().to_owned();
    let gw = Gateway::start(&["--folder", &b]);
    let out = Command::new("node")
        .arg(dir.join("folders.mjs"))
        .arg(gw.url())
        .arg(repo_root().join("target/browser-shots"))
        .arg(&name)
        .env("BB_CHROMIUM", &chromium)
        .current_dir(&dir)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all folder checks passed"),
        "the browser check failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The session the page created is the second folder's.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listed = runtime.block_on(async {
        let mut c = gw.connect().await;
        let mut events = Vec::new();
        c.call("i", "bb.init", json!({}), &mut events).await;
        c.call("l", "bb.listSessions", json!({}), &mut events).await
    });
    let sessions = listed["result"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["folder"], b, "{listed}");
}
