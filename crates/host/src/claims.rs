//! Claims: sessions a connection's request in flight is about to bind (`bb.createSession`,
//! `bb.selectSession`), held from other connections' implicit tabs until that request binds
//! them or is answered.

use std::collections::{BTreeMap, BTreeSet};

use crate::tabs::ConnId;

/// Requests in flight that will bind a session, and the sessions held for them.
#[derive(Debug, Default)]
pub(crate) struct Claims {
    /// `bb.createSession` requests in flight, by connection and request id.
    creating: BTreeSet<(ConnId, String)>,
    /// `bb.selectSession` requests in flight and the session each names.
    selecting: BTreeMap<(ConnId, String), String>,
    /// Sessions that began streaming while a create was in flight: held for the creator.
    held: BTreeSet<String>,
}

impl Claims {
    /// A request of `conn` that will bind `session` (`None`: the session it creates) was
    /// dispatched. Dispatching the same request again (after a hold) changes nothing.
    pub(crate) fn claim(&mut self, conn: ConnId, request: String, session: Option<String>) {
        match session {
            Some(session) => {
                self.selecting.insert((conn, request), session);
            }
            None => {
                self.creating.insert((conn, request));
            }
        }
    }

    /// The request was answered; returns the sessions no longer held.
    pub(crate) fn answered(&mut self, conn: ConnId, request: &str) -> Vec<String> {
        let key = (conn, request.to_owned());
        let mut freed: Vec<String> = self.selecting.remove(&key).into_iter().collect();
        self.creating.remove(&key);
        self.release(&mut freed);
        freed
    }

    /// The connection closed: its requests will never bind; returns the sessions no longer
    /// held.
    pub(crate) fn closed(&mut self, conn: ConnId) -> Vec<String> {
        let mut freed = Vec::new();
        self.selecting.retain(|(c, _), s| {
            if *c == conn {
                freed.push(std::mem::take(s));
            }
            *c != conn
        });
        self.creating.retain(|(c, _)| *c != conn);
        self.release(&mut freed);
        freed
    }

    /// Once no create is in flight, the held sessions are free; of `freed`, only the ones no
    /// request still claims stay.
    fn release(&mut self, freed: &mut Vec<String>) {
        if self.creating.is_empty() {
            freed.extend(std::mem::take(&mut self.held));
        }
        freed.retain(|s| !self.is_held(s));
        freed.sort();
        freed.dedup();
    }

    fn is_held(&self, session: &str) -> bool {
        self.held.contains(session) || self.selecting.values().any(|s| s == session)
    }

    /// Whether the events of `session`, which no tab shows, are held for a claiming request
    /// rather than offered to implicit tabs. `seen`: some tab was already sent events of it
    /// (then it is no new session a create in flight may have made).
    pub(crate) fn holds(&mut self, session: &str, seen: impl FnOnce() -> bool) -> bool {
        if self.is_held(session) {
            return true;
        }
        if !self.creating.is_empty() && !seen() {
            self.held.insert(session.to_owned());
            return true;
        }
        false
    }

    /// A tab now shows `session`: it is no longer held.
    pub(crate) fn bound(&mut self, session: &str) {
        self.held.remove(session);
    }

    /// The session is gone.
    pub(crate) fn removed(&mut self, session: &str) {
        self.held.remove(session);
    }
}
