//! Kilo's event types as the bridge holds them: the types it knows as static strings, so an
//! event of one costs no allocation for its type on its way to the webview.

use std::borrow::Cow;

/// `kind`, an event's `type` as read from the stream: borrowed from the program when it is
/// one of the types the bridge maps (`bb_normalize::class::classify_kilo_fields`' table) or
/// one the stream sends often, an owned copy for any other (the open set is forwarded as is).
pub fn event_type(kind: &str) -> Cow<'static, str> {
    bb_engine_client::known_types!(
        kind,
        [
            "message.updated",
            "message.part.updated",
            "message.part.delta",
            "message.removed",
            "message.part.removed",
            "permission.asked",
            "question.asked",
            "permission.replied",
            "question.replied",
            "question.rejected",
            "todo.updated",
            "session.status",
            "session.idle",
            "session.turn.open",
            "session.turn.close",
            "session.error",
            "session.diff",
            "file.edited",
            "session.created",
            "session.updated",
            "session.deleted",
            "session.compacted",
            "session.queue.changed",
            "session.drain.interrupted",
            "server.connected",
            "server.heartbeat",
            "server.instance.disposed",
            "sync",
            "plugin.added",
            "project.updated",
            "catalog.updated",
            "integration.updated",
            "reference.updated",
            "file.watcher.updated",
            "installation.updated",
            "lsp.updated",
        ]
    )
}
