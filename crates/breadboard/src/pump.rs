//! The stream task of one BreadBoard session: stream updates → host inputs, each event
//! handed over recorded for the resume position; a sub-agent's session the engine names gets
//! a stream of its own.

use std::sync::{Arc, Mutex};

use crate::client::{SessionStream, StreamUpdate};
use bb_protocol::v1::ConnectionStatus;

use crate::cursors::Handed;
use crate::mapping::SessionState;
use crate::{Shared, lock};
use bb_host::Input;
use tokio::sync::mpsc::error::TrySendError;

fn failed(error: String) -> Input {
    Input::connection(ConnectionStatus::Error, None, Some(error))
}

fn open(shared: &Shared, session: &str) -> Result<SessionStream, crate::client::BbError> {
    let last_seq = shared.cursors.resume_from(session);
    let fresh = !lock(&shared.states).contains_key(session);
    let options = shared.config.stream;
    match last_seq {
        Some(seq) if fresh => SessionStream::open_primed(&shared.client, session, seq, options),
        _ => SessionStream::open(&shared.client, session, last_seq, options),
    }
}

/// Streams one session until it ends, fails for good, or the task is aborted. A session with
/// a saved position resumes after it; when this bridge holds no state for it yet (a restart),
/// the stream is primed so its pending permissions show again.
pub(super) async fn run(shared: Arc<Shared>, session: String) {
    // Opened in a function of its own: a local kept across the awaits below would keep a
    // second stream's room in every session's task.
    let mut stream = match open(&shared, &session) {
        Ok(stream) => stream,
        Err(error) => {
            // Ids are checked before a stream is asked for; this is a bridge bug, not an
            // engine failure, so the connection status stays as it is.
            tracing::warn!(%error, "a session stream could not be opened");
            return;
        }
    };
    // The inputs of one item, handed over in order; the list is kept from one item to the
    // next, so an event's inputs need no list of their own.
    let mut mapped = Vec::new();
    let mut held = Held::default();
    loop {
        // What an item makes is worked out by plain functions, and the item is gone by the
        // first await after it: only the inputs left to hand over are kept across the
        // awaits, so the task stays small.
        let (gone, ended) = match stream.next().await {
            None => return,
            Some(Ok(update)) => map(&shared, &session, &mut held, update, &mut mapped),
            Some(Err(error)) => {
                mapped.extend(lost(&shared, &session, &error));
                (false, true)
            }
        };
        for out in mapped.drain(..) {
            if let Input::SessionRunning { session_id, running } = &out
                && *session_id == session
            {
                stream.set_busy(*running);
            }
            // A sub-agent's session: its events (and its prompts) are followed too.
            if let Input::SessionUpserted(child) = &out
                && child.parent_id.is_some()
            {
                crate::ensure_stream(&shared, &child.session_id);
            }
            // Room in the channel is the common case: handed over without building the
            // sending future (the input moved into it and out again, ~0.1 k instructions).
            let out = match shared.updates.try_send(out) {
                Ok(()) => continue,
                Err(TrySendError::Closed(_)) => return,
                Err(TrySendError::Full(out)) => out,
            };
            if shared.updates.send(out).await.is_err() {
                return;
            }
        }
        if gone {
            // The position of a session the engine no longer holds is useless. An ended
            // session that still exists keeps it: re-opening resumes, never replays.
            shared.cursors.forget(&session);
        }
        if ended {
            return;
        }
    }
}

/// What a stream task holds of its session's entries in the adapter's tables, each taken at
/// the first update that needs it (as the tables made them then): each later update reaches
/// them without the tables' locks and look-ups by the session's name.
#[derive(Default)]
struct Held {
    state: Option<Arc<Mutex<SessionState>>>,
    handed: Handed,
}

/// One stream update as host inputs (onto `out`), with whether the engine no longer holds the session and
/// whether its stream ended. The update's `seq` is marked handed before the hand-off: the
/// runtime may write and confirm it at once, and a confirmation never moves past what was
/// handed over.
fn map(
    shared: &Shared,
    session: &str,
    held: &mut Held,
    update: StreamUpdate,
    out: &mut Vec<Input>,
) -> (bool, bool) {
    let seq = match &update {
        StreamUpdate::Event(event) => event.seq,
        _ => None,
    };
    let gone = matches!(update, StreamUpdate::Ended { summary: None });
    let ended = matches!(update, StreamUpdate::Ended { .. });
    let state = held.state.get_or_insert_with(|| shared.state(session));
    lock(state).apply_into(session, update, out);
    if let Some(seq) = seq {
        shared.cursors.handed(&mut held.handed, session, seq);
    }
    (gone, ended)
}

/// The inputs that say a session's stream died: the session is not shown running on it, and
/// the health monitor turns the connection back and resumes this stream once the engine
/// answers.
fn lost(shared: &Shared, session: &str, error: &crate::client::BbError) -> Vec<Input> {
    let why = format!("session {session}: {error}");
    let mut lost = lock(&shared.state(session)).stream_lost(
        session,
        format!("The event stream of this session was lost ({error}). The bridge resumes it from the last event it delivered once the engine answers again."),
    );
    lock(&shared.lost).insert(session.to_owned());
    lost.push(failed(why));
    lost
}
