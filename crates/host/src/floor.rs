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

use bb_protocol::v1::{EventId, EventsPayload};
use foldhash::{HashMap, HashMapExt as _};

/// One session's published messages and what was reported.
#[derive(Debug, Default)]
struct Floor {
    /// Ordinal of the last message published.
    published: u64,
    /// `(ordinal, last event id)` of published messages not yet passed by the floor, oldest
    /// first (messages without an engine event id have none). Each id is kept inline (a
    /// Kilo or BreadBoard id fits): a message published costs no allocation here.
    ids: VecDeque<(u64, EventId)>,
    /// The floor last reported.
    reported: u64,
}

/// Every session's floor, and the resume positions to report.
#[derive(Debug)]
pub(crate) struct Floors {
    sessions: HashMap<String, Floor>,
    out: VecDeque<(String, String)>,
    /// Most ids kept per session: beyond it the oldest go (a floor then moves only once it
    /// passes the oldest kept: later, never wrong).
    cap: usize,
}

impl Floors {
    pub(crate) fn new(cap: usize) -> Self {
        Floors { sessions: HashMap::new(), out: VecDeque::new(), cap: cap.max(1) }
    }

    /// A message of `payload.session_id` is published: its ordinal.
    pub(crate) fn publish(&mut self, payload: &EventsPayload) -> u64 {
        let session = &*payload.session_id;
        let floor = match self.sessions.get_mut(session) {
            Some(f) => f,
            None => self.sessions.entry(session.to_owned()).or_default(),
        };
        floor.published += 1;
        if let Some(id) = payload.events.ids().rev().find(|id| !id.is_empty()) {
            floor.ids.push_back((floor.published, EventId::from(id)));
            if floor.ids.len() > self.cap {
                floor.ids.pop_front();
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
            last = floor.ids.pop_front().map(|(_, id)| id);
        }
        if let Some(id) = last {
            self.out.push_back((session.to_owned(), id.as_str().to_owned()));
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
