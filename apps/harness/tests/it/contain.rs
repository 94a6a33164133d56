//! `bb-harness contain` over the vectors in `fixtures/normalize/contain.jsonl`, and
//! `--resolve` against real symlinks.

use serde_json::Value;

use crate::run::{fixtures, harness};

#[test]
fn contain_matches_every_vector() {
    let text = std::fs::read_to_string(fixtures().join("normalize/contain.jsonl")).unwrap();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let name = case["name"].as_str().unwrap();
        let path = case["path"].as_str().unwrap();
        if path.contains('\0') || path.is_empty() {
            continue; // argv cannot carry these; covered by the unit table
        }
        let args = [
            "contain",
            "--root",
            case["root"].as_str().unwrap(),
            "--flavor",
            case["flavor"].as_str().unwrap(),
            "--",
            path,
        ];
        let (ok, out) = harness(&args, b"");
        assert!(ok, "{name}");
        let got: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(got["path"], case["path"], "{name}");
        assert_eq!(got["verdict"], case["verdict"], "{name}: {got}");
        assert_eq!(got["normalized"], case["normalized"], "{name}");
    }
}

#[cfg(unix)]
#[test]
fn resolve_catches_symlink_escapes() {
    use std::os::unix::fs::symlink;
    let base = std::env::temp_dir().join(format!("bb-contain-it-{}", std::process::id()));
    let ws = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    symlink(&outside, ws.join("escape")).unwrap();
    symlink("src", ws.join("inner")).unwrap();
    let root = ws.to_str().unwrap();
    let paths = ["src/a.rs", "escape/secret.txt", "inner/new/file.rs", "escape", "../outside/x"];
    let (ok, out) = harness(
        &["contain", "--root", root, "--resolve", paths[0], paths[1], paths[2], paths[3], paths[4]],
        b"",
    );
    assert!(ok);
    let verdicts: Vec<String> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["verdict"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(verdicts, ["inside", "outside", "inside", "outside", "outside"]);
    // Lexically, the symlink escape looks inside: only --resolve rejects it.
    let (_, lexical) = harness(&["contain", "--root", root, paths[1]], b"");
    assert!(lexical.contains("\"inside\""));
    std::fs::remove_dir_all(&base).unwrap();
}
