//! What the mapping keeps on an event's payload for the batcher and the reducers (its
//! `info`, a text part's fields, a delta's, as `bb_normalize::kilo`'s reads find them): on
//! every captured event, and on bodies of odd shapes, the memo is exactly what their own
//! read of the payload finds.

use std::path::Path;
use std::sync::Arc;

use bb_host::Input;
use bb_normalize::kilo::{Delta, DeltaMemo, InfoFields, TextPart, TextPartMemo};
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
            Input::PromptRaised { event: Some(shown), .. }
            | Input::PromptSettled { event: Some(shown), .. } => out.push(&shown.0),
            _ => {}
        }
    }
    out
}

/// Maps each data line; returns how many events carried each memo (`info`, text part,
/// delta), and how many of the deltas' memos knew where their string is. Every memo must
/// equal a read of the payload, and a place it knows must hold the string's value.
fn check(lines: &[String]) -> ([usize; 3], usize) {
    let mut mapping = KiloEventState::new(Arc::new(Shared::default()));
    let mut routing = Routing::default();
    let mut kept = [0; 3];
    let mut spans = 0;
    for data in lines {
        let KiloUpdate::Event { event } = routing.route(data.clone()) else { continue };
        for ev in events(&mapping.apply(event)) {
            let p = &ev.payload;
            if let Some(memo) = p.memo::<InfoFields<'static>>() {
                kept[0] += 1;
                assert_eq!(memo, &p.read::<InfoFields<'_>>(), "{data}");
            }
            if let Some(memo) = p.memo::<TextPartMemo>() {
                kept[1] += 1;
                assert_eq!(memo.fields(p), p.read::<TextPart<'_>>(), "{data}");
            }
            if let Some(memo) = p.memo::<DeltaMemo>() {
                kept[2] += 1;
                assert_eq!(memo.fields(p), p.read::<Delta<'_>>(), "{data}");
                spans += usize::from(memo.span().is_some());
                // Where it says the string is: its text, between quotes, and its value.
                if let (Some(at), Some(text)) = (memo.span(), p.text()) {
                    let delta = p.get("delta").and_then(serde_json::Value::as_str);
                    assert_eq!(Some(&text[at.clone()]), delta, "{data}");
                    assert!(text[..at.start].ends_with("\"delta\":\""), "{data}");
                    assert!(text[at.end..].starts_with('"'), "{data}");
                }
            }
        }
    }
    (kept, spans)
}

#[test]
fn every_captured_memo_is_what_the_reads_find() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/engine/kilo");
    let mut lines = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "sse")) {
        let text = std::fs::read_to_string(path).unwrap();
        lines.extend(text.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_owned));
    }
    let (kept, spans) = check(&lines);
    assert!(kept.iter().all(|&k| k >= 5), "the captures' events carry each memo: {kept:?}");
    assert!(spans >= 5, "the captures' deltas know where their text is: {spans}");
}

#[test]
fn memos_of_odd_shapes_are_what_the_reads_find() {
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
    let lines: Vec<String> = infos
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
    assert_eq!(check(&lines), ([lines.len(), 0, 0], 0));
    let parts = [
        r#"{"id":"prt_1","messageID":"msg_1","type":"text","text":"hi \n \u00e9"}"#,
        r#"{"id":"prt_1","type":"reasoning","text":7,"messageID":null}"#,
        r#"{"id":"prt_1","id":"prt_2","messageID":"msg_1","type":"text","text":""}"#,
    ];
    let lines: Vec<String> = parts
        .iter()
        .map(|part| {
            format!(
                r#"{{"id":"evt_p","type":"message.part.updated","properties":{{"sessionID":"ses_1","part":{part}}}}}"#
            )
        })
        .collect();
    assert_eq!(check(&lines), ([0, lines.len(), 0], 0));
    let deltas = [
        r#""messageID":"msg_1","partID":"prt_1","field":"text","delta":"plain [text] {}""#,
        r#""delta":"first","messageID":"msg_1","partID":"prt_1","field":"text""#,
        r#""messageID":"msg_1","partID":"prt_1","field":"text","delta":"a \"b\"""#,
        r#""messageID":"msg_1","partID":"prt_1","field":"text","delta":["x"]"#,
        r#""messageID":"","partID":1,"delta":"d","delta":"e""#,
    ];
    let lines: Vec<String> = deltas
        .iter()
        .map(|fields| {
            format!(
                r#"{{"id":"evt_d","type":"message.part.delta","properties":{{"sessionID":"ses_1",{fields}}}}}"#
            )
        })
        .collect();
    // Only the two deltas whose string needed no unescaping know where it is.
    assert_eq!(check(&lines), ([0, 0, lines.len()], 2));
}
