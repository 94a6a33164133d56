//! The committed `schemas/` (JSON Schemas and `webview.d.ts`) must equal what the types
//! generate. `UPDATE_SCHEMAS=1` rewrites
//! them (and deletes stale files).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use bb_protocol::schema::{all_schemas, render};

fn schemas_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
}

fn committed_files(dir: &Path, prefix: &str, out: &mut BTreeSet<String>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        if entry.file_type().unwrap().is_dir() {
            committed_files(&entry.path(), &rel, out);
        } else if rel.ends_with(".json") || rel.ends_with(".d.ts") {
            out.insert(rel);
        }
    }
}

#[test]
fn committed_schemas_match_the_types() {
    let dir = schemas_dir();
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some_and(|v| v == "1");
    let mut generated: Vec<(String, String)> =
        all_schemas().iter().map(|(p, s)| (p.clone(), render(s))).collect();
    generated.push(("webview.d.ts".to_owned(), bb_protocol::typescript::declarations()));
    let expected: BTreeSet<String> = generated.iter().map(|(p, _)| p.clone()).collect();
    let mut committed = BTreeSet::new();
    committed_files(&dir, "", &mut committed);

    let mut drift = Vec::new();
    for (rel, text) in &generated {
        let path = dir.join(rel);
        let text = text.clone();
        if fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            if update {
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(&path, text).unwrap();
            } else {
                drift.push(format!("changed or missing: schemas/{rel}"));
            }
        }
    }
    for stale in committed.difference(&expected) {
        if update {
            fs::remove_file(dir.join(stale)).unwrap();
        } else {
            drift.push(format!("stale: schemas/{stale}"));
        }
    }
    assert!(
        drift.is_empty(),
        "schemas drifted from the types; run `UPDATE_SCHEMAS=1 cargo test -p bb-protocol` \
         and commit:\n{}",
        drift.join("\n")
    );
}

#[test]
fn every_schema_is_a_2020_12_document() {
    for (rel, schema) in all_schemas() {
        let value = schema.as_value();
        assert_eq!(
            value["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{rel} lacks the meta-schema"
        );
    }
}
