//! Workspace files for Kilo: snippets by bytes, head and tail lines; containment refusals
//! counted; the adapter's counters.

use std::sync::Arc;

use bb_protocol::v1::{ListFilesParams, ReadFileSnippetParams};

use crate::files::{list_in, snippet_in};
use crate::{KiloAdapter, KiloOptions};
use bb_service::engine::EngineAdapter;

fn params(
    path: &str,
    max: Option<u64>,
    head: Option<u64>,
    tail: Option<u64>,
) -> ReadFileSnippetParams {
    ReadFileSnippetParams {
        session_id: "ses_a".into(),
        path: path.into(),
        max_bytes: max,
        head_lines: head,
        tail_lines: tail,
    }
}

#[tokio::test]
async fn snippets_by_bytes_and_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "1\n2\n3\n4\n5\n").unwrap();
    std::fs::write(dir.path().join("u.txt"), "aé\n").unwrap();
    let (adapter, _updates) = KiloAdapter::with_options(KiloOptions::default());
    let root = dir.path().to_path_buf();
    let cases = [
        (params("f.txt", None, None, None), "1\n2\n3\n4\n5\n", false),
        (params("f.txt", Some(3), None, None), "1\n2", true),
        (params("f.txt", None, Some(2), None), "1\n2\n", true),
        (params("f.txt", None, None, Some(2)), "4\n5\n", true),
        (params("f.txt", None, Some(1), Some(1)), "1\n5\n", true),
        (params("f.txt", None, Some(3), Some(3)), "1\n2\n3\n4\n5\n", false),
        (params("f.txt", None, Some(0), None), "", true),
        // A character cut by maxBytes is dropped, not half-sent.
        (params("u.txt", Some(2), None, None), "a", true),
    ];
    for (p, content, truncated) in cases {
        let what = format!("{p:?}");
        let got = snippet_in(&adapter, root.clone(), p).await.unwrap();
        assert_eq!((got.content.as_str(), got.truncated), (content, truncated), "{what}");
    }
}

#[tokio::test]
async fn refusals_are_counted_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("/", dir.path().join("root")).unwrap();
    let (adapter, _updates) = KiloAdapter::with_options(KiloOptions::default());
    let adapter: Arc<KiloAdapter> = adapter;
    let root = dir.path().to_path_buf();
    for path in ["..", "/etc", "root/etc", "sub/../../x"] {
        let err =
            snippet_in(&adapter, root.clone(), params(path, None, None, None)).await.unwrap_err();
        assert_eq!(err.code(), "path_outside_workspace", "{path}");
    }
    let err = list_in(
        &adapter,
        root.clone(),
        ListFilesParams { session_id: "ses_a".into(), path: "a\0b".into() },
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "invalid_path");
    assert_eq!(adapter.out_of_scope_count(), 5);
    let counters = adapter.counters();
    assert!(counters.contains(&("security.out_of_scope_path_attempt_count", 5)), "{counters:?}");
    let listed =
        list_in(&adapter, root, ListFilesParams { session_id: "ses_a".into(), path: ".".into() })
            .await
            .unwrap();
    let names: Vec<&str> = listed.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["root", "sub"]);
}
