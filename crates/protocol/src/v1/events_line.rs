//! The line of a `bb/events` message and the JSON of each of its items written directly: the
//! constant parts as literal text, the written event and update lists spliced as they are,
//! strings as serde_json escapes them, the rest through serde_json's own writers, so the
//! bytes are those serde's derive writes.

use serde::Serialize;

use super::topics::{EngineEvent, EventItem, EventsPayload};

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
    string(out, session_id);
    out.extend_from_slice(br#","events":"#);
    match events.written_json() {
        Some(items) => splice(out, items.map(|j| j.get())),
        None => json(out, events)?,
    }
    str_field(out, br#","tabId":"#, tab_id.as_deref());
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

/// The JSON of one event item, byte for byte what `serde_json::to_writer` writes for it:
/// the host writes every item it sends once, as it adds it to a message.
///
/// Why not serde: the item flattens its [`EngineEvent`], which the derive writes as a map
/// entry by entry through serde's flattening layer, escaping every key; an item is a few
/// short strings around a payload that is written as it is. Field order and the skipped
/// fields follow the derives on [`EventItem`] and [`EngineEvent`].
pub(crate) fn write_item(out: &mut Vec<u8>, item: &EventItem) -> serde_json::Result<()> {
    let EventItem { event, class, message_id, truncated, session_id } = item;
    let EngineEvent { id, event_type, turn, ts, payload } = event;
    out.extend_from_slice(br#"{"id":"#);
    string(out, id);
    out.extend_from_slice(br#","type":"#);
    string(out, event_type);
    field(out, br#","turn":"#, turn.as_ref())?;
    field(out, br#","ts":"#, ts.as_ref())?;
    out.extend_from_slice(br#","payload":"#);
    json(out, payload)?;
    str_field(out, br#","class":"#, Some(&**class).filter(|c| !c.is_empty()));
    str_field(out, br#","messageId":"#, message_id.as_deref());
    field(out, br#","truncated":"#, truncated.as_ref())?;
    str_field(out, br#","sessionId":"#, session_id.as_deref());
    out.push(b'}');
    Ok(())
}

/// `text` as a JSON string, as serde_json writes it: as it is between quotes when it holds
/// nothing JSON escapes (a `"`, a `\` or a control character; found sixteen bytes a step),
/// else through serde_json's escaping. Ids, types and classes are plain text.
pub(super) fn string(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    if bb_payload::string_stop(bytes, 0).is_none() {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    } else {
        // Writing a `str` into a `Vec` cannot fail.
        let _ = json(out, text);
    }
}

/// `key` and `text` as a JSON string ([`string`]), when there is a text.
pub(super) fn str_field(out: &mut Vec<u8>, key: &[u8], text: Option<&str>) {
    if let Some(text) = text {
        out.extend_from_slice(key);
        string(out, text);
    }
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
