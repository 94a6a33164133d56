//! The line of a `bb/state` message written directly: the envelope's and each summary's
//! constant parts as literal text, strings as serde_json escapes them and numbers through
//! serde_json's own writers, so the bytes are those serde's derive writes.

use super::events_line::{field, str_field, string};
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
    str_field(out, br#","activeSessionId":"#, active_session_id.as_deref());
    field(out, br#","running":"#, running.as_ref())?;
    field(out, br#","pendingPermissionCount":"#, pending_permission_count.as_ref())?;
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
    string(out, session_id);
    str_field(out, br#","title":"#, title.as_deref());
    str_field(out, br#","status":"#, status.as_deref());
    field(out, br#","updatedAt":"#, updated_at.as_ref())?;
    field(out, br#","queuedPrompts":"#, queued_prompts.as_ref())?;
    str_field(out, br#","parentId":"#, parent_id.as_deref());
    field(out, br#","pendingPermissionCount":"#, pending_permission_count.as_ref())?;
    str_field(out, br#","folder":"#, folder.as_deref());
    out.push(b'}');
    Ok(())
}
