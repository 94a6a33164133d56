//! Resume positions: how far every webview showing a session was written its events.
//!
//! Each message the host publishes for a session gets the session's next publish ordinal
//! (1, 2, …); a tab records it under that ordinal (a declared resync under the ordinal of
//! the last message its view covers), and the runtime reports which `seq`s it wrote
//! ([`crate::Input::Written`]). A session's *floor* is the least ordinal written to every
//! tab showing it — attached or detached (a closed window kept for a reattach), hidden,
//! stalled or reading slowly alike — or, when no tab is bound to it, to every tab-less
//! connection's implicit tab. The host reports the id of the last engine event at or below
//! the floor ([`crate::Host::poll_resume`]): what an engine with resumable streams may
//! resume after without any window missing an event after a bridge restart.
//!
//! When no tab shows a session (none bound, no tab-less connection open), its floor does not
//! move: its events wait in the early store for the first tab that binds it, and after a
//! restart they come again from the engine. A tab stops holding a floor when it shows
//! another session, when its session is removed, or when it is forgotten (detached beyond
//! [`crate::HostConfig::max_detached_tabs`]).

use std::collections::VecDeque;

use bb_protocol::v1::EventsPayload;
use foldhash::{HashMap, HashMapExt as _};

/// One session's published messages and what was reported.
#[derive(Debug, Default)]
struct Floor {
    /// Ordinal of the last message published.
    published: u64,
    /// `(ordinal, last event id)` of published messages not yet passed by the floor, oldest
    /// first (messages without an engine event id have none).
    ids: VecDeque<(u64, String)>,
    /// The floor last reported.
    reported: u64,
}

/// Every session's floor, and the resume positions to report.
#[derive(Debug)]
pub(crate) struct Floors {
    sessions: HashMap<String, Floor>,
    out: VecDeque<(String, String)>,
    /// Buffers of ids the floors passed, for the next published ids (a few at most).
    spare: Vec<String>,
    /// Most ids kept per session: beyond it the oldest go (a floor then moves only once it
    /// passes the oldest kept: later, never wrong).
    cap: usize,
}

impl Floors {
    pub(crate) fn new(cap: usize) -> Self {
        Floors {
            sessions: HashMap::new(),
            out: VecDeque::new(),
            spare: Vec::new(),
            cap: cap.max(1),
        }
    }

    /// A message of `payload.session_id` is published: its ordinal.
    pub(crate) fn publish(&mut self, payload: &EventsPayload) -> u64 {
        let floor = match self.sessions.get_mut(&payload.session_id) {
            Some(f) => f,
            None => self.sessions.entry(payload.session_id.clone()).or_default(),
        };
        floor.published += 1;
        if let Some(id) = payload.events.ids().rev().find(|id| !id.is_empty()) {
            let mut kept = self.spare.pop().unwrap_or_default();
            kept.clear();
            kept.push_str(id);
            floor.ids.push_back((floor.published, kept));
            if floor.ids.len() > self.cap
                && let Some((_, old)) = floor.ids.pop_front()
            {
                spare(&mut self.spare, old);
            }
        }
        floor.published
    }

    /// The ordinal of `session`'s last published message (what its view covers).
    pub(crate) fn current(&self, session: &str) -> u64 {
        self.sessions.get(session).map_or(0, |f| f.published)
    }

    /// Sessions with something published.
    pub(crate) fn sessions(&self) -> impl Iterator<Item = &str> {
        self.sessions.keys().map(String::as_str)
    }

    /// `session`'s floor is now `at`: reports the last event id at or below it, when the
    /// floor passed one not reported yet.
    pub(crate) fn moved(&mut self, session: &str, at: u64) {
        let Some(floor) = self.sessions.get_mut(session) else { return };
        if at <= floor.reported {
            return;
        }
        floor.reported = at;
        let mut last = None;
        while floor.ids.front().is_some_and(|(ordinal, _)| *ordinal <= at) {
            if let Some(passed) =
                std::mem::replace(&mut last, floor.ids.pop_front().map(|(_, id)| id))
            {
                spare(&mut self.spare, passed);
            }
        }
        if let Some(id) = last {
            self.out.push_back((session.to_owned(), id));
        }
    }

    /// A session is gone.
    pub(crate) fn remove(&mut self, session: &str) {
        self.sessions.remove(session);
    }

    /// The next resume position to report: (session, event id).
    pub(crate) fn poll(&mut self) -> Option<(String, String)> {
        self.out.pop_front()
    }
}

/// Most id buffers kept for reuse.
const SPARE_IDS: usize = 8;

/// Keeps `id`'s buffer for a later id, while there is room.
fn spare(spare: &mut Vec<String>, id: String) {
    if spare.len() < SPARE_IDS {
        spare.push(id);
    }
}
