//! The REST client against the fake engine: commands, typed errors, files, snippets,
//! downloads and attachments.

use bb_breadboard::client::{BbError, PermissionDecision, ReadMode, SnippetOptions};
use bb_engine_client::transport::FormFile;
use bb_fake_engine::EngineConfig;
use serde_json::json;

use crate::support::Engine;

#[tokio::test]
async fn commands_answer_202_or_a_typed_error() {
    let engine = Engine::start(EngineConfig::default()).await;
    let c = &engine.client;
    let s = engine.session().await;

    assert_eq!(c.health().await.unwrap().protocol_version.as_deref(), Some("1.0"));
    assert_eq!(c.set_mode(&s, "plan").await.unwrap().detail["mode"], "plan");
    assert_eq!(c.set_model(&s, "mock/echo").await.unwrap().detail["model"], "mock/echo");
    assert_eq!(c.stop(&s).await.unwrap().detail["stopping"], true);
    assert_eq!(c.list_checkpoints(&s).await.unwrap().detail["count"], 1);
    assert!(matches!(
        c.command(&s, "no_such_command", None).await,
        Err(BbError::InvalidRequest { status: 400, detail }) if detail == "Unsupported command: no_such_command"
    ));
    assert!(matches!(c.command(&s, "apply_diff", None).await, Err(BbError::NotImplemented { .. })));
    assert!(matches!(
        c.permission_decision(&s, "nope", PermissionDecision::AllowOnce, None).await,
        Err(BbError::Conflict { detail }) if detail == "no permission request is active"
    ));
    assert!(matches!(c.send_input(&s, "   ", &[]).await, Err(BbError::Refused { .. })));
    assert!(
        matches!(c.get_session("0000").await, Err(BbError::NotFound { detail }) if detail == "session not found")
    );
    assert!(matches!(c.get_session("../etc").await, Err(BbError::InvalidId { .. })));
    assert_eq!(c.list_sessions().await.unwrap().len(), 1);
}

#[tokio::test]
async fn files_snippets_downloads_and_attachments_follow_the_engine_rules() {
    let engine = Engine::start(EngineConfig::default()).await;
    let c = &engine.client;
    let s = engine.session().await;
    let ws = engine.dir.path();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("README.md"), "# demo\nhello\n").unwrap();
    let long: String = (1..=100).map(|i| format!("line {i}\n")).collect();
    std::fs::write(ws.join("src/long.txt"), &long).unwrap();

    let root = c.list_files(&s, ".").await.unwrap();
    let names: Vec<_> = root.iter().map(|e| (e.path.as_str(), e.kind.as_str())).collect();
    assert_eq!(names.first(), Some(&("src", "directory")));
    assert!(names.contains(&("README.md", "file")));
    assert!(
        matches!(c.list_files(&s, "../").await, Err(BbError::InvalidRequest { status: 400, detail }) if detail == "invalid path")
    );
    assert!(
        matches!(c.list_files(&s, "/etc").await, Err(BbError::InvalidRequest { detail, .. }) if detail == "file paths must be workspace-relative")
    );
    assert!(matches!(c.list_files(&s, "nope").await, Err(BbError::NotFound { .. })));

    // Within max_bytes (default 80000) the engine ignores head/tail and answers the file.
    let options = SnippetOptions { head_lines: Some(2), tail_lines: Some(1), max_bytes: None };
    let snippet = c.read_file(&s, "src/long.txt", ReadMode::Snippet, options).await.unwrap();
    assert_eq!((snippet.content.as_str(), snippet.truncated), (long.as_str(), false));
    let options = SnippetOptions { head_lines: Some(2), tail_lines: Some(2), max_bytes: Some(40) };
    let snippet = c.read_file(&s, "src/long.txt", ReadMode::Snippet, options).await.unwrap();
    assert!(snippet.truncated);
    assert_eq!(snippet.content, "line 1\nline 2\n\n\u{2026} (truncated) \u{2026}\n\nline 100\n");
    assert_eq!(snippet.total_bytes, Some(long.len() as u64));
    let whole =
        c.read_file(&s, "README.md", ReadMode::Cat, SnippetOptions::default()).await.unwrap();
    assert_eq!((whole.content.as_str(), whole.truncated), ("# demo\nhello\n", false));

    assert_eq!(&c.download(&s, "README.md").await.unwrap()[..], b"# demo\nhello\n");
    assert!(
        matches!(c.download(&s, "../../etc/passwd").await, Err(BbError::InvalidRequest { detail, .. }) if detail == "artifact path outside workspace")
    );
    assert!(matches!(c.download(&s, "missing").await, Err(BbError::NotFound { .. })));

    let file = FormFile {
        filename: "note.txt".into(),
        mime: "text/plain".into(),
        bytes: "note body\n".into(),
    };
    let uploaded = c
        .upload_attachments(&s, vec![file.clone()], Some(json!({"source": "sidebar"})))
        .await
        .unwrap();
    assert_eq!(uploaded.len(), 1);
    assert_eq!(uploaded[0].size_bytes, Some(10));
    let stored = ws.join(".breadboard/attachments").join(&uploaded[0].id).join("note.txt");
    assert_eq!(std::fs::read_to_string(stored).unwrap(), "note body\n");
    c.send_input(&s, "see attached", &[uploaded[0].id.clone()]).await.unwrap();
}
