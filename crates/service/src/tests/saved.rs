//! The prompts file: what is saved is read back (kinds, paths, the showing event and its
//! class, an answer on its way), a later save wins over an earlier one, and a missing, corrupt or foreign file
//! reads as nothing.

use bb_host::{Prompt, PromptKind, SavedAnswer, SavedPrompt};
use bb_normalize::EventClass;
use bb_protocol::v1::{AnsweredBy, EngineEvent};
use serde_json::json;

use crate::saved::{PROMPTS_FILE, PromptFile};

fn saved(request: &str, kind: PromptKind) -> SavedPrompt {
    let event = EngineEvent {
        id: format!("e-{request}").into(),
        event_type: "permission.asked".into(),
        turn: None,
        ts: None,
        payload: json!({"id": request, "sessionID": "s"}).as_object().cloned().unwrap().into(),
    };
    SavedPrompt {
        prompt: Prompt { paths: vec!["a.txt".into()], ..Prompt::new("s", request, kind) },
        event: Some((event, EventClass::PermissionRequest)),
        answer: None,
    }
}

#[tokio::test]
async fn what_is_saved_is_read_back_and_the_last_save_wins() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = PromptFile::new(&dir.path().join("state"));
    assert!(file.load().is_empty(), "no file: nothing saved");
    file.save(&[]);
    file.flush().await;
    assert!(!dir.path().join("state").exists(), "nothing asked, nothing written");
    let all: Vec<SavedPrompt> = [
        ("p1", PromptKind::Exec),
        ("p2", PromptKind::Write),
        ("p3", PromptKind::Read),
        ("p4", PromptKind::Network),
        ("p5", PromptKind::Question),
        ("p6", PromptKind::Unknown),
    ]
    .into_iter()
    .map(|(r, k)| saved(r, k))
    .collect();
    // An answer on its way is saved with its prompt (write-ahead).
    let mut all = all;
    all[1].answer = Some(SavedAnswer {
        decision: "allow_once".into(),
        by: AnsweredBy { connection: 2, tab_id: Some("t1".into()) },
        call: Some(json!({"method": "bb.approvePermission", "params": {"decision": "allow_once"}})),
    });
    file.save(&all);
    file.save(&all[..2]);
    file.flush().await;
    assert_eq!(file.load(), all[..2].to_vec());
    file.save(&[]);
    file.flush().await;
    assert!(file.load().is_empty());
    let names: Vec<_> = std::fs::read_dir(dir.path().join("state")).unwrap().collect();
    assert_eq!(names.len(), 1, "no temporary file left behind");
}

#[test]
fn a_corrupt_or_foreign_file_reads_as_nothing_and_an_unknown_kind_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(PROMPTS_FILE);
    let mut file = PromptFile::new(dir.path());
    for text in ["{not json", r#"{"version": 9, "prompts": []}"#, "[]"] {
        std::fs::write(&path, text).unwrap();
        assert!(file.load().is_empty(), "{text}");
    }
    let odd =
        r#"{"version": 1, "prompts": [{"sessionId": "s", "requestId": "r", "kind": "teleport"}]}"#;
    std::fs::write(&path, odd).unwrap();
    let read = file.load();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].prompt.kind, PromptKind::Unknown);
    assert_eq!(read[0].event, None);
}
