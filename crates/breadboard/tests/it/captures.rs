//! Every real capture replayed through the session stream, chunked exactly as the engine
//! wrote it: no loss, no panic, every event once and in order, 409 bodies as gaps.

use std::path::{Path, PathBuf};

use bb_breadboard::client::{BbEvent, BreadboardClient, GapReason, SessionStream, StreamUpdate};
use bb_engine_client::fake::{FakeEnd, FakeStream, FakeTransport};
use bb_engine_client::transport::TransportError;
use bytes::Bytes;

use bb_normalize::Engine;

use crate::support::{collect_until, fast, seqs};

/// The body chunks of a `.wire` capture (HTTP/1.1 chunked framing removed), or the `.sse`
/// body as one chunk when there is no `.wire`.
fn chunks_of(sse: &Path) -> Vec<Bytes> {
    let wire = sse.with_extension("wire");
    let Ok(raw) = std::fs::read(&wire) else {
        return vec![Bytes::from(std::fs::read(sse).unwrap())];
    };
    let start = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let mut rest = &raw[start..];
    let mut chunks = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        let data = &rest[eol + 2..eol + 2 + size];
        chunks.push(Bytes::copy_from_slice(data));
        rest = &rest[(eol + 2 + size + 2).min(rest.len())..];
    }
    let joined: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
    assert_eq!(joined, std::fs::read(sse).unwrap(), "{} de-chunks to its .sse", wire.display());
    chunks
}

fn status_of(sse: &Path) -> u16 {
    let meta = std::fs::read_to_string(sse.with_extension("meta.json")).unwrap_or_default();
    if meta.contains("409 Conflict") { 409 } else { 200 }
}

/// The engine's captures (`fixtures/engine/breadboard/**.sse`), sorted by path, as every
/// capture test reads them.
fn sse_files() -> Vec<PathBuf> {
    let files: Vec<_> = bb_test_support::captures::captures()
        .into_iter()
        .filter(|(engine, _)| *engine == Engine::BreadBoard)
        .map(|(_, path)| path)
        .collect();
    assert!(files.len() >= 39, "captures missing: {}", files.len());
    files
}

/// `(sse id, seq)` of every `data:` event in a capture, by plain text scanning.
fn expected_events(body: &str) -> Vec<(String, Option<u64>)> {
    let mut out = Vec::new();
    let mut id = String::new();
    for line in body.lines() {
        if let Some(v) = line.strip_prefix("id: ") {
            id = v.to_owned();
        } else if let Some(data) = line.strip_prefix("data: ") {
            let json: serde_json::Value = serde_json::from_str(data).unwrap();
            out.push((id.clone(), json["seq"].as_u64()));
        }
    }
    out
}

#[tokio::test]
async fn every_real_capture_replays_with_no_loss() {
    for sse in sse_files() {
        let name = sse.display().to_string();
        let fake = FakeTransport::new();
        let client = BreadboardClient::new(std::sync::Arc::new(fake.clone()));
        if status_of(&sse) == 409 {
            let body = std::fs::read_to_string(&sse).unwrap();
            fake.push_stream(FakeStream::Refuse(TransportError::Http { status: 409, body }));
            fake.push_stream(FakeStream::script(Vec::<String>::new(), FakeEnd::Eof));
            let mut stream = SessionStream::open(&client, "s", Some(4), fast()).unwrap();
            let updates =
                collect_until(&mut stream, |u| matches!(u, StreamUpdate::Ended { .. })).await;
            assert_eq!(
                updates[0],
                StreamUpdate::Gap { reason: GapReason::WindowExceeded { last_seq: 4 }, lost: None },
                "{name}"
            );
            continue;
        }
        let body = std::fs::read_to_string(&sse).unwrap();
        let expected = expected_events(&body);
        let first_seq = expected.iter().find_map(|e| e.1);
        fake.push_stream(FakeStream::Script { chunks: chunks_of(&sse), end: FakeEnd::Eof });
        // The stream is confirmed over REST; the session's run loop has ended (so EOF ends it).
        fake.route_json(
            bb_engine_client::transport::HttpMethod::Get,
            "/v1/sessions/s",
            &serde_json::json!({"session_id": "s", "status": "failed"}),
        );
        let resume = first_seq.and_then(|s| s.checked_sub(1)).filter(|s| *s > 0);
        let mut stream = SessionStream::open(&client, "s", resume, fast()).unwrap();
        let updates = collect_until(&mut stream, |u| matches!(u, StreamUpdate::Ended { .. })).await;

        let got: Vec<_> = updates
            .iter()
            .filter_map(|u| match u {
                StreamUpdate::Event(e) => Some((e.sse_id.to_string(), e.seq)),
                _ => None,
            })
            .collect();
        assert_eq!(got, expected, "{name}");
        assert!(
            !updates.iter().any(|u| matches!(
                u,
                StreamUpdate::Malformed { .. }
                    | StreamUpdate::Gap {
                        reason: GapReason::Discontinuity { .. } | GapReason::WindowExceeded { .. },
                        ..
                    }
            )),
            "{name}: {updates:#?}"
        );
        let numbered = seqs(&updates);
        assert!(numbered.windows(2).all(|w| w[1] == w[0] + 1), "{name}: {numbered:?}");
        assert!(
            matches!(updates.last(), Some(StreamUpdate::Ended { summary: Some(s) }) if s.status == "failed"),
            "{name}"
        );
    }
}

/// Every event type of the real captures is one the bridge holds as a static string: the
/// engine's events cost no allocation for their type ([`bb_breadboard::client::BbEvent`]'s
/// `kind`).
#[test]
fn every_captured_event_type_is_held_without_allocation() {
    let mut owned = std::collections::BTreeSet::new();
    let mut types = std::collections::BTreeSet::new();
    for sse in sse_files() {
        for line in std::fs::read_to_string(&sse).unwrap().lines() {
            let Some(data) = line.strip_prefix("data: ") else { continue };
            let Ok(event) = BbEvent::parse("1", data) else { continue };
            types.insert(event.kind.to_string());
            if let std::borrow::Cow::Owned(kind) = event.kind {
                owned.insert(kind);
            }
        }
    }
    assert!(types.len() >= 20, "only {} types captured: {types:?}", types.len());
    assert!(owned.is_empty(), "captured types not held as static strings: {owned:?}");
}

/// Every assistant and reasoning event of the real captures (streams and replay sources)
/// keeps the memo of its text fields the batcher and the reducers read, and the memo finds
/// what lookups in the payload's tree find.
#[test]
fn every_captured_text_event_keeps_a_memo_of_what_its_payload_holds() {
    use bb_normalize::breadboard::{TEXT_FIELDS, TextMemo, reads_text};

    let mut lines = Vec::new();
    for sse in &sse_files() {
        let body = std::fs::read_to_string(sse).unwrap();
        lines.extend(body.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_owned));
        let source = sse.with_file_name("source.jsonl");
        if let Ok(body) = std::fs::read_to_string(source) {
            lines.extend(body.lines().filter(|l| l.starts_with('{')).map(str::to_owned));
        }
    }
    let (mut checked, mut read) = (0, 0);
    for data in &lines {
        let Ok(event) = BbEvent::parse("1", data) else { continue };
        if !reads_text(&event.kind) {
            assert!(event.payload.memo::<TextMemo>().is_none(), "{data}");
            continue;
        }
        let looked_up =
            TEXT_FIELDS.map(|f| event.payload.get(f).and_then(serde_json::Value::as_str));
        // A string written with an escape (`\n` in a text) is read, not kept.
        let escaped = looked_up.iter().flatten().any(|s| s.contains(['"', '\\', '\n', '\t', '\r']));
        match event.payload.memo::<TextMemo>() {
            Some(memo) => {
                assert_eq!(memo.found(&event.payload), looked_up, "{data}");
                checked += 1;
            }
            None => {
                assert!(escaped, "no memo: {data}");
                read += 1;
            }
        }
    }
    assert!(checked >= 100 && checked > read, "{checked} text events kept a memo, {read} not");
}
