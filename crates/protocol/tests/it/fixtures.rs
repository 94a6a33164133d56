//! Table-driven checks over `fixtures/protocol/*.jsonl` (format in its README.md).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use bb_protocol::{Limits, RejectCode, Transport, Verdict, decode};
use serde_json::Value;

/// One fixture case.
pub(crate) struct Case {
    pub(crate) file: String,
    pub(crate) name: String,
    pub(crate) transport: Transport,
    pub(crate) raw: Vec<u8>,
    pub(crate) max_bytes: Option<usize>,
    pub(crate) expect: Value,
    pub(crate) reply_id: Option<String>,
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/protocol")
}

pub(crate) fn load_cases() -> Vec<Case> {
    let mut paths: Vec<_> = fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    let mut cases = Vec::new();
    for path in paths {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        for (n, line) in fs::read_to_string(&path).unwrap().lines().enumerate() {
            let case: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{file}:{}: not JSON: {e}", n + 1));
            cases.push(parse_case(&file, &case));
        }
    }
    cases
}

fn parse_case(file: &str, case: &Value) -> Case {
    let name = case["name"].as_str().unwrap().to_owned();
    let raw = match (case.get("input"), case.get("input_bytes")) {
        (Some(Value::String(s)), None) => s.clone().into_bytes(),
        (Some(v), None) => serde_json::to_vec(v).unwrap(),
        (None, Some(Value::Array(bytes))) => {
            bytes.iter().map(|b| u8::try_from(b.as_u64().unwrap()).unwrap()).collect()
        }
        _ => panic!("{file}: {name}: exactly one of input / input_bytes"),
    };
    assert!(!raw.contains(&b'\n'), "{file}: {name}: raw message holds a newline");
    Case {
        file: file.to_owned(),
        transport: case["transport"].as_str().unwrap().parse().unwrap(),
        raw,
        max_bytes: case.get("max_bytes").map(|m| usize::try_from(m.as_u64().unwrap()).unwrap()),
        expect: case["expect"].clone(),
        reply_id: case.get("reply_id").map(|r| r.as_str().unwrap().to_owned()),
        name,
    }
}

impl Case {
    pub(crate) fn limits(&self) -> Limits {
        self.max_bytes.map_or_else(Limits::default, Limits::with_max_bytes)
    }
}

#[test]
fn every_fixture_case_gets_its_verdict() {
    let cases = load_cases();
    let mut failures = Vec::new();
    for case in &cases {
        let limits = case.limits();
        let verdict =
            serde_json::to_value(Verdict::of(case.transport, &case.raw, &limits)).unwrap();
        if verdict != case.expect {
            failures.push(format!(
                "{} / {}: got {verdict}, want {}",
                case.file, case.name, case.expect
            ));
        }
        let reply_id = decode(case.transport, &case.raw, &limits).err().and_then(|r| r.id);
        if reply_id != case.reply_id {
            failures.push(format!(
                "{} / {}: reply id {reply_id:?}, want {:?}",
                case.file, case.name, case.reply_id
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn tables_cover_every_method_topic_and_code_on_both_transports() {
    let cases = load_cases();
    assert!(cases.len() >= 80, "only {} cases", cases.len());
    let mut seen = BTreeSet::new();
    for case in &cases {
        let key = |field: &str| case.expect[field].as_str().map(str::to_owned);
        if let Some(m) = key("method") {
            seen.insert(format!("{}:method:{m}", case.transport));
        }
        if let Some(t) = key("topic") {
            seen.insert(format!("{}:topic:{t}", case.transport));
        }
        if let Some(c) = key("code") {
            seen.insert(format!("{}:code:{c}", case.transport));
        }
    }
    let mut wanted = Vec::new();
    for m in bb_protocol::v1::V1Method::ALL {
        wanted.push(format!("v1:method:{m}"));
    }
    for m in bb_protocol::ws::WsMethod::ALL {
        wanted.push(format!("ws:method:{m}"));
    }
    for t in bb_protocol::v1::V1Topic::NAMES {
        wanted.push(format!("v1:topic:{t}"));
    }
    for t in bb_protocol::ws::WsEventKind::NAMES {
        wanted.push(format!("ws:topic:{t}"));
    }
    for code in RejectCode::ALL {
        wanted.push(format!("v1:code:{code}"));
        if code != RejectCode::UnsupportedVersion {
            wanted.push(format!("ws:code:{code}"));
        }
    }
    let missing: Vec<_> = wanted.iter().filter(|w| !seen.contains(*w)).collect();
    assert!(missing.is_empty(), "no fixture for: {missing:?}");
    let names: BTreeSet<_> = cases.iter().map(|c| (c.file.as_str(), c.name.as_str())).collect();
    assert_eq!(names.len(), cases.len(), "case names must be unique per file");
}
