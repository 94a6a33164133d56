//! The line of a `bb/events` message written directly: the envelope's constant parts as
//! literal text, the written event and update lists spliced as they are, the rest through
//! serde_json's own writers, so the bytes are those serde's derive writes.

use serde::Serialize;

use super::topics::EventsPayload;

/// Appends the line of a `bb/events` message carrying `payload` to `out` (no `\n`), byte for
/// byte what `serde_json::to_writer` writes for the `V1Message` holding it.
///
/// Why not serde: the envelope is a flattened, adjacently tagged enum, which serde's derive
/// writes as a map entry by entry, escaping every key; and on the delivery path a message is
/// about one written event (BreadBoard's deltas coalesce), so the generic layers cost more
/// than the text they produce. Field order and the skipped `None`s follow the derive on
/// [`EventsPayload`]; strings, the view and unwritten lists still go through serde_json.
pub(crate) fn write(out: &mut Vec<u8>, payload: &EventsPayload) -> serde_json::Result<()> {
    let EventsPayload { session_id, events, tab_id, seq, resync, view, updates, earlier } = payload;
    out.extend_from_slice(br#"{"v":1,"kind":"evt","topic":"bb/events","payload":{"sessionId":"#);
    json(out, session_id.as_str())?;
    out.extend_from_slice(br#","events":"#);
    match events.written_json() {
        Some(items) => splice(out, items.map(|j| j.get())),
        None => json(out, events)?,
    }
    field(out, br#","tabId":"#, tab_id.as_deref())?;
    field(out, br#","seq":"#, seq.as_ref())?;
    field(out, br#","resync":"#, resync.as_ref())?;
    field(out, br#","view":"#, view.as_ref())?;
    if let Some(updates) = updates {
        out.extend_from_slice(br#","updates":"#);
        splice(out, updates.written().iter().map(|j| j.get()));
    }
    field(out, br#","earlier":"#, earlier.as_ref())?;
    out.extend_from_slice(b"}}");
    Ok(())
}

/// `value` as serde_json writes it (a string escaped as the derive escapes it, a non-finite
/// number as `null`).
pub(super) fn json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *out, value)
}

/// `key` (`,"name":`) and `value` as serde_json writes it, when there is a value: a field the
/// derive skips when it is `None`.
pub(super) fn field<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    key: &[u8],
    value: Option<&T>,
) -> serde_json::Result<()> {
    if let Some(value) = value {
        out.extend_from_slice(key);
        json(out, value)?;
    }
    Ok(())
}

/// A JSON array of texts that are JSON already.
fn splice<'a>(out: &mut Vec<u8>, items: impl Iterator<Item = &'a str>) {
    out.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item.as_bytes());
    }
    out.push(b']');
}
