//! A multi-root workspace through `bb-sidecar --workspace A --folder B`: `bb.init` lists the
//! folders, each session works in the folder it was created in (`bb.createSession
//! {folder}`, the first by default; any other folder is `folder_not_in_workspace`), its
//! files, paths and diffs contained there; `bb/state` says each session's folder. On the demo
//! engine (one instance per folder), on the real Kilo server (one server, each folder its own
//! project `directory`) and on the real `kilo acp` agent (one agent per folder).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::acp::{Acp, first, last_request_id};
use crate::harness::{LONG, Sidecar, World, children_of, cmdline, eventually, kilo_bin_or_skip};
use crate::kilo::Kilo;

const WAIT: Duration = Duration::from_secs(60);

/// The canonical path of `path`, as the bridge lists it.
fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path).unwrap().display().to_string()
}

fn create_in(sidecar: &mut Sidecar, folder: Option<&str>) -> Value {
    let params = match folder {
        Some(f) => json!({"folder": f}),
        None => json!({}),
    };
    sidecar.ok("bb.createSession", params)
}

/// `bb/state` lists both sessions, each with its folder.
fn assert_state_folders(sidecar: &mut Sidecar, expected: &[(&str, &str)]) {
    sidecar.state(WAIT, "both sessions with their folders", |s| {
        let sessions = s["sessions"].as_array().cloned().unwrap_or_default();
        expected.iter().all(|(id, folder)| {
            sessions.iter().any(|e| e["sessionId"] == *id && e["folder"] == *folder)
        })
    });
}

/// `bb.listSessions` lists each session with its folder.
fn assert_listed_folders(sidecar: &mut Sidecar, expected: &[(&str, &str)]) {
    let listed = sidecar.ok("bb.listSessions", json!({}));
    for (id, folder) in expected {
        let entry = listed["sessions"].as_array().unwrap().iter().find(|s| s["sessionId"] == *id);
        assert_eq!(entry.map(|e| e["folder"].clone()), Some(json!(folder)), "{listed}");
    }
}

#[test]
fn two_folders_on_the_demo_engine_each_session_contained_in_its_own() {
    let world = World::new();
    std::fs::create_dir_all(world.path("other")).unwrap();
    std::fs::write(world.path("other/other.txt"), "other folder\n").unwrap();
    let (a, b) = (canonical(&world.path("project")), canonical(&world.path("other")));
    let mut sidecar =
        Sidecar::spawn(&["--workspace", &a, "--folder", &b], &world.env(), world.path("demo.err"));

    let init = sidecar.ok("bb.init", json!({"workspaceTrusted": true}));
    assert_eq!(init["folders"], json!([a, b]), "{init}");

    // A folder the workspace does not have: refused, naming the folders there are.
    let elsewhere = world.path("elsewhere").display().to_string();
    let refused = sidecar.call("bb.createSession", json!({"folder": elsewhere}));
    assert_eq!(refused["error"]["code"], "folder_not_in_workspace", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains(&a) && message.contains(&b), "{message}");

    let in_a = create_in(&mut sidecar, None);
    assert_eq!(in_a["folder"], a, "the default folder is the first: {in_a}");
    let in_b = create_in(&mut sidecar, Some(&b));
    assert_eq!(in_b["folder"], b, "{in_b}");
    let (sa, sb) = (
        in_a["sessionId"].as_str().unwrap().to_owned(),
        in_b["sessionId"].as_str().unwrap().to_owned(),
    );
    assert_state_folders(&mut sidecar, &[(&sa, &a), (&sb, &b)]);
    assert_listed_folders(&mut sidecar, &[(&sa, &a), (&sb, &b)]);

    // Each session's files are its folder's; the other folder's paths are refused.
    let files = sidecar.ok("bb.listFiles", json!({"sessionId": sb, "path": "."}));
    let names: Vec<&str> =
        files["entries"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
    assert!(names.contains(&"other.txt") && !names.contains(&"hello.txt"), "{names:?}");
    let snippet = sidecar.ok("bb.readFileSnippet", json!({"sessionId": sb, "path": "other.txt"}));
    assert_eq!(snippet["content"], "other folder\n");
    let snippet = sidecar.ok("bb.readFileSnippet", json!({"sessionId": sa, "path": "hello.txt"}));
    assert_eq!(snippet["content"], "hello world\n");
    for (session, path) in [
        (&sa, format!("{b}/other.txt")),
        (&sa, "../other/other.txt".to_owned()),
        (&sb, format!("{a}/hello.txt")),
        (&sb, "../project/hello.txt".to_owned()),
    ] {
        let res = sidecar.call("bb.readFileSnippet", json!({"sessionId": session, "path": path}));
        assert_eq!(res["ok"], false, "{path} read for a session of the other folder: {res}");
        let res = sidecar
            .call("bb.downloadArtifact", json!({"sessionId": session, "artifactPath": path}));
        assert_eq!(res["ok"], false, "{path} downloaded for a session of the other folder: {res}");
    }

    // A turn in B writes in B; its diff is B's session's, not A's.
    sidecar.ok("bb.sendMessage", json!({"sessionId": sb, "text": "Create a Makefile"}));
    sidecar.session_events_until(&sb, "permission_request", WAIT);
    sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": sb, "requestId": "permission_1", "decision": "allow_once"}),
    );
    sidecar.session_events_until(&sb, "run_finished", WAIT);
    sidecar.ok("bb.openDiff", json!({"sessionId": sb, "filePath": "Makefile"}));
    let diff = sidecar.wait_event(WAIT, "B's diff event", |m| {
        m["topic"] == "bb/events" && m["payload"]["events"][0]["type"] == "bridge.diff"
    });
    assert!(diff["payload"]["events"][0]["payload"]["diff"].as_str().unwrap().contains("+CC=gcc"));
    let in_a = sidecar.call("bb.openDiff", json!({"sessionId": sa, "filePath": "Makefile"}));
    assert_eq!(in_a["ok"], false, "A's session has no diff of B's turn: {in_a}");

    sidecar.close_stdin();
    assert!(sidecar.wait_exit(WAIT).success(), "{}", sidecar.stderr());
}

/// One `kilo serve` for both folders: each session is created in its folder's project (the
/// engine reports it as the session's `directory`), a write lands in that folder, and the
/// other folder's files are refused for it.
#[test]
fn two_folders_on_one_real_kilo_server() {
    let world = World::new();
    std::fs::create_dir_all(world.path("other")).unwrap();
    std::fs::write(world.path("other/other.txt"), "other folder\n").unwrap();
    let b = canonical(&world.path("other"));
    let Some(mut k) = Kilo::start_in_with(world, "ask", "ask", &["--folder", &b, "--trusted"])
    else {
        return;
    };
    let a = canonical(&k.world.path("project"));
    let init = k.sidecar.ok("bb.init", json!({}));
    assert_eq!(init["folders"], json!([a, b]), "{init}");

    let in_a = create_in(&mut k.sidecar, None);
    let in_b = create_in(&mut k.sidecar, Some(&b));
    let (sa, sb) = (
        in_a["sessionId"].as_str().unwrap().to_owned(),
        in_b["sessionId"].as_str().unwrap().to_owned(),
    );
    assert_eq!((&in_a["folder"], &in_b["folder"]), (&json!(a), &json!(b)));
    assert_state_folders(&mut k.sidecar, &[(&sa, &a), (&sb, &b)]);

    // The engine itself says where each session works.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (ca, cb) = (k.engine_client_in(&a), k.engine_client_in(&b));
    let (ea, eb) = runtime.block_on(async {
        (ca.get_session(&sa).await.unwrap(), cb.get_session(&sb).await.unwrap())
    });
    assert_eq!(ea.directory.as_deref(), Some(a.as_str()), "{ea:?}");
    assert_eq!(eb.directory.as_deref(), Some(b.as_str()), "{eb:?}");
    assert_listed_folders(&mut k.sidecar, &[(&sa, &a), (&sb, &b)]);

    // A write of B's session lands in B; its events reach B's session (B's own stream).
    k.send(&sb, "Write it MOCK:write:made-in-b.txt");
    let asked = k.asked(&sb);
    let id = asked["payload"]["id"].as_str().unwrap().to_owned();
    k.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": sb, "requestId": id, "decision": "allow_once"}),
    );
    k.sidecar.session_events_until(&sb, "session.turn.close", LONG);
    assert!(Path::new(&b).join("made-in-b.txt").is_file(), "the write did not land in B");
    assert!(!k.world.path("project/made-in-b.txt").exists(), "B's write landed in A");
    k.sidecar.ok("bb.openDiff", json!({"sessionId": sb, "filePath": "made-in-b.txt"}));

    // Each session's files are its folder's.
    let snippet = k.sidecar.ok("bb.readFileSnippet", json!({"sessionId": sb, "path": "other.txt"}));
    assert_eq!(snippet["content"], "other folder\n");
    for (session, path) in [(&sa, format!("{b}/other.txt")), (&sb, format!("{a}/hello.txt"))] {
        let res = k.sidecar.call("bb.readFileSnippet", json!({"sessionId": session, "path": path}));
        assert_eq!(res["error"]["code"], "path_outside_workspace", "{path}: {res}");
    }

    // A's session still streams on A's stream.
    k.send(&sa, "MOCK:text:still%20in%20a");
    let events = k.sidecar.session_events_until(&sa, "session.turn.close", LONG);
    assert!(crate::harness::streamed_text(&events).contains("still in a"), "{events:#?}");
    k.finish();
}

/// `kilo acp` serves one workspace: each folder gets its own agent, started with the folder's
/// first session, working in the folder; an approved edit of B's session is written in B.
#[test]
fn two_folders_on_acp_one_agent_each() {
    let Some(bin) = kilo_bin_or_skip() else { return };
    let world = World::new();
    std::fs::create_dir_all(world.path("other")).unwrap();
    let b = canonical(&world.path("other"));
    let mock = world.start_mock_llm("ask", "ask");
    let mut acp = Acp::with_flags(
        world,
        Some(mock),
        &["--trusted", "--folder", &b],
        &[bin.to_str().unwrap(), "acp"],
    );
    let me = acp.sidecar.child.id();
    let agents = || -> Vec<u32> {
        children_of(me).into_iter().filter(|p| cmdline(*p).contains(" acp")).collect()
    };
    assert_eq!(agents(), vec![acp.agent], "one agent (the default folder's) until B is used");

    let in_b = create_in(&mut acp.sidecar, Some(&b));
    assert_eq!(in_b["folder"], b, "{in_b}");
    let sb = in_b["sessionId"].as_str().unwrap().to_owned();
    let mut second = 0;
    eventually(LONG, "B's agent", || {
        second = agents().into_iter().find(|p| *p != acp.agent).unwrap_or(0);
        second != 0
    });
    let cwd = std::fs::read_link(format!("/proc/{second}/cwd")).unwrap();
    assert_eq!(cwd.display().to_string(), b, "B's agent works in B");

    acp.send(&sb, "Write it MOCK:write:notes.txt");
    let events = acp.sidecar.session_events_until(&sb, "request_permission", LONG);
    let id = last_request_id(&events);
    acp.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": sb, "requestId": id, "decision": "allow_once"}),
    );
    let events = acp.sidecar.session_events_until(&sb, "turn_ended", LONG);
    let write = first(&events, "fs_write");
    assert_eq!(write["payload"]["path"], format!("{b}/notes.txt"), "{write}");
    assert_eq!(
        std::fs::read_to_string(Path::new(&b).join("notes.txt")).unwrap(),
        "hello from mock\n"
    );
    assert!(!acp.world.path("project/notes.txt").exists(), "B's edit landed in A");
    acp.finish();
    eventually(Duration::from_secs(10), "B's agent to be gone", || crate::harness::is_dead(second));
}
