//! The line of a `bb/state` message written directly: the envelope's and each summary's
//! constant parts as literal text, strings and numbers through serde_json's own writers, so
//! the bytes are those serde's derive writes.

use serde::Serialize;

use super::results::SessionSummary;
use super::topics::StatePayload;

/// Appends the line of a `bb/state` message carrying `payload` to `out` (no `\n`), byte for
/// byte what `serde_json::to_writer` writes for the `V1Message` holding it.
///
/// Why not serde: the line lists every session's summary, and the host sends one per change
/// burst, so at start-up the lines hold sessions² summaries; the derive writes each field as
/// a map entry, escaping every key. Field order and the skipped `None`s follow the derives on
/// [`StatePayload`] and [`SessionSummary`].
pub(crate) fn write(out: &mut Vec<u8>, payload: &StatePayload) -> serde_json::Result<()> {
    let StatePayload { sessions, active_session_id, running, pending_permission_count } = payload;
    out.extend_from_slice(br#"{"v":1,"kind":"evt","topic":"bb/state","payload":{"sessions":["#);
    for (i, session) in sessions.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        summary(out, session)?;
    }
    out.push(b']');
    if let Some(id) = active_session_id {
        out.extend_from_slice(br#","activeSessionId":"#);
        json(out, id.as_str())?;
    }
    if let Some(running) = running {
        out.extend_from_slice(if *running {
            br#","running":true"#
        } else {
            br#","running":false"#
        });
    }
    if let Some(count) = pending_permission_count {
        out.extend_from_slice(br#","pendingPermissionCount":"#);
        json(out, count)?;
    }
    out.extend_from_slice(b"}}");
    Ok(())
}

/// One session's summary, as its derive writes it.
fn summary(out: &mut Vec<u8>, session: &SessionSummary) -> serde_json::Result<()> {
    let SessionSummary {
        session_id,
        title,
        status,
        updated_at,
        queued_prompts,
        parent_id,
        pending_permission_count,
        folder,
    } = session;
    out.extend_from_slice(br#"{"sessionId":"#);
    json(out, session_id.as_str())?;
    if let Some(title) = title {
        out.extend_from_slice(br#","title":"#);
        json(out, title.as_str())?;
    }
    if let Some(status) = status {
        out.extend_from_slice(br#","status":"#);
        json(out, status.as_str())?;
    }
    if let Some(updated_at) = updated_at {
        out.extend_from_slice(br#","updatedAt":"#);
        json(out, updated_at)?;
    }
    if let Some(queued) = queued_prompts {
        out.extend_from_slice(br#","queuedPrompts":"#);
        json(out, queued)?;
    }
    if let Some(parent_id) = parent_id {
        out.extend_from_slice(br#","parentId":"#);
        json(out, parent_id.as_str())?;
    }
    if let Some(count) = pending_permission_count {
        out.extend_from_slice(br#","pendingPermissionCount":"#);
        json(out, count)?;
    }
    if let Some(folder) = folder {
        out.extend_from_slice(br#","folder":"#);
        json(out, folder.as_str())?;
    }
    out.push(b'}');
    Ok(())
}

/// `value` as serde_json writes it (a string escaped as the derive escapes it, a non-finite
/// number as `null`).
fn json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *out, value)
}
