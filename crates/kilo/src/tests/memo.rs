//! What the mapping keeps on an event's payload for the batcher and the reducers (its
//! `info`, a text part's fields, a delta's, as `bb_normalize::kilo`'s reads find them): on
//! every captured event, and on bodies of odd shapes, the memo is exactly what their own
//! read of the payload finds.

use std::path::Path;
use std::sync::Arc;

use bb_host::Input;
use bb_normalize::kilo::{Delta, InfoFields, TextPart};
use bb_protocol::v1::EngineEvent;

use crate::client::{KiloUpdate, Routing};
use crate::events::KiloEventState;
use crate::shared::Shared;

/// The engine events among `inputs`.
fn events(inputs: &[Input]) -> Vec<&EngineEvent> {
    let mut out = Vec::new();
    for input in inputs {
        match input {
            Input::Events { events, .. } => out.extend(events.iter().map(|(e, _)| e)),
            Input::PromptRaised { event: Some((e, _)), .. }
            | Input::PromptSettled { event: Some((e, _)), .. } => out.push(e),
            _ => {}
        }
    }
    out
}

/// Maps each data line; returns how many events carried a memo. Every memo must equal a
/// read of the payload.
fn check(lines: &[String]) -> usize {
    let mut mapping = KiloEventState::new(Arc::new(Shared::default()));
    let mut routing = Routing::default();
    let mut kept = 0;
    for data in lines {
        let KiloUpdate::Event { event } = routing.route(data.clone()) else { continue };
        for ev in events(&mapping.apply(event)) {
            let p = &ev.payload;
            if let Some(memo) = p.memo::<InfoFields<'static>>() {
                kept += 1;
                assert_eq!(memo, &p.read::<InfoFields<'_>>(), "{data}");
            }
            if let Some(memo) = p.memo::<TextPart<'static>>() {
                kept += 1;
                assert_eq!(memo, &p.read::<TextPart<'_>>(), "{data}");
            }
            if let Some(memo) = p.memo::<Delta<'static>>() {
                kept += 1;
                assert_eq!(memo, &p.read::<Delta<'_>>(), "{data}");
            }
        }
    }
    kept
}

#[test]
fn every_captured_info_memo_is_what_the_reducers_read() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo");
    let mut lines = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "sse")) {
        let text = std::fs::read_to_string(path).unwrap();
        lines.extend(text.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_owned));
    }
    let kept = check(&lines);
    assert!(kept > 100, "the captures' message and session events carry it: {kept}");
}

#[test]
fn info_memos_of_odd_shapes_are_what_the_reducers_read() {
    let infos = [
        r#"{"id":"msg_1","role":"assistant","time":{"created":1,"completed":2}}"#,
        r#"{"id":"msg_1","role":"assistant","time":{"completed":null}}"#,
        r#"{"id":"msg_1","time":5,"error":null}"#,
        r#"{"id":"msg_1","error":"boom"}"#,
        r#"{"id":"msg_1","error":{"name":"MessageAbortedError","data":{"message":"x"}}}"#,
        r#"{"id":"msg_1","error":{"name":"APIError","data":"x","message":"m"}}"#,
        r#"{"id":"msg_\u00e9","title":"a \"quoted\" title","role":7}"#,
        r#"{"id":"ses_1","title":"first","title":"second"}"#,
        r#"{"id":1,"title":["x"],"time":{"completed":{"a":1}}}"#,
    ];
    let mut lines: Vec<String> = infos
        .iter()
        .enumerate()
        .flat_map(|(i, info)| {
            ["message.updated", "session.updated"].map(|kind| {
                format!(
                    r#"{{"id":"evt_{i}","type":"{kind}","properties":{{"sessionID":"ses_1","info":{info}}}}}"#
                )
            })
        })
        .collect();
    let parts = [
        r#"{"id":"prt_1","messageID":"msg_1","type":"text","text":"hi \n \u00e9"}"#,
        r#"{"id":"prt_1","type":"reasoning","text":7,"messageID":null}"#,
        r#"{"id":"prt_1","id":"prt_2","messageID":"msg_1","type":"text","text":""}"#,
    ];
    lines.extend(parts.iter().map(|part| {
        format!(
            r#"{{"id":"evt_p","type":"message.part.updated","properties":{{"sessionID":"ses_1","part":{part}}}}}"#
        )
    }));
    let deltas = [
        r#""messageID":"msg_1","partID":"prt_1","field":"text","delta":"a "b"""#,
        r#""messageID":"msg_1","partID":"prt_1","field":"text","delta":["x"]"#,
        r#""messageID":"","partID":1,"delta":"d","delta":"e""#,
    ];
    lines.extend(deltas.iter().map(|fields| {
        format!(
            r#"{{"id":"evt_d","type":"message.part.delta","properties":{{"sessionID":"ses_1",{fields}}}}}"#
        )
    }));
    assert_eq!(check(&lines), lines.len());
}
