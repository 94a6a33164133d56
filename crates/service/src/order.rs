//! `RequestOrder`: one webview connection's requests take effect in the order sent and are
//! answered in that order. Pure bookkeeping; the loop dispatches what it hands out.
//!
//! * Every request gets a ticket when it arrives; its response is held until every earlier
//!   request is answered, then released (responses leave in request order, even when a later
//!   call finishes first).
//! * A request that changes state (`bb.createSession`, `bb.selectSession`,
//!   `bb.deleteSession`, `bb.sendMessage`, `bb.stop`) starts only once every earlier request
//!   finished, and nothing after it starts before it finishes. Other requests run together,
//!   but never overtake an earlier state change (a `bb.listSessions` sent after a
//!   `bb.createSession` sees the new session).
//! * An answer the bridge or the loop gives without calling the engine (a rejected line, a
//!   bridge command) takes its turn like any other.

use std::collections::{BTreeMap, VecDeque};

use bb_protocol::v1::{V1Method, V1Request, V1Response};

/// Responses now due, in request order, each with what travels with it.
pub(crate) type Due<T> = Vec<(V1Response, T)>;
/// Requests that may start now, with their tickets.
pub(crate) type Start = Vec<(Ticket, V1Request)>;

/// A request's place in its connection's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Ticket(u64);

/// Whether a method changes engine or session state (and so is serialized).
pub(crate) fn changes_state(method: V1Method) -> bool {
    matches!(
        method,
        V1Method::CreateSession
            | V1Method::SelectSession
            | V1Method::DeleteSession
            | V1Method::SendMessage
            | V1Method::Stop
    )
}

#[derive(Debug)]
struct Slot<T> {
    id: String,
    state_change: bool,
    response: Option<(V1Response, T)>,
}

/// The order of one connection's requests. `T` travels with each response until it is
/// released (what the loop applies once the response is out).
#[derive(Debug)]
pub(crate) struct RequestOrder<T = ()> {
    next: u64,
    slots: BTreeMap<Ticket, Slot<T>>,
    waiting: VecDeque<(Ticket, V1Request)>,
    running_reads: usize,
    running_change: bool,
}

impl<T: Default> Default for RequestOrder<T> {
    fn default() -> Self {
        Self {
            next: 0,
            slots: BTreeMap::new(),
            waiting: VecDeque::new(),
            running_reads: 0,
            running_change: false,
        }
    }
}

impl<T: Default> RequestOrder<T> {
    fn ticket(&mut self, id: String, state_change: bool) -> Ticket {
        let ticket = Ticket(self.next);
        self.next += 1;
        self.slots.insert(ticket, Slot { id, state_change, response: None });
        ticket
    }

    /// Admits a request; returns the requests that may start now (this one or none).
    pub(crate) fn admit(&mut self, request: V1Request) -> Vec<(Ticket, V1Request)> {
        let ticket = self.ticket(request.id.clone(), changes_state(request.call.method()));
        self.waiting.push_back((ticket, request));
        self.start_ready()
    }

    /// Takes a turn for an answer given without a call (a rejected line); returns the
    /// responses now due, in order.
    pub(crate) fn answer_now(&mut self, response: V1Response) -> Vec<(V1Response, T)> {
        let ticket = self.ticket(response.id.clone(), false);
        if let Some(slot) = self.slots.get_mut(&ticket) {
            slot.response = Some((response, T::default()));
        }
        self.release()
    }

    /// Records the response of a started request; returns the responses now due (in order)
    /// and the requests that may start now.
    pub(crate) fn complete(
        &mut self,
        ticket: Ticket,
        response: V1Response,
        extra: T,
    ) -> (Due<T>, Start) {
        if let Some(slot) = self.slots.get_mut(&ticket)
            && slot.response.is_none()
        {
            if slot.state_change {
                self.running_change = false;
            } else {
                self.running_reads = self.running_reads.saturating_sub(1);
            }
            slot.response = Some((response, extra));
        }
        let due = self.release();
        (due, self.start_ready())
    }

    /// Requests admitted and not yet answered.
    pub(crate) fn unanswered(&self) -> usize {
        self.slots.len()
    }

    /// Answers every unanswered request with `error(id)` (the connection is closing and the
    /// grace ran out); returns every response still owed, in order.
    pub(crate) fn abandon(&mut self, error: impl Fn(&str) -> V1Response) -> Vec<(V1Response, T)> {
        self.waiting.clear();
        self.running_reads = 0;
        self.running_change = false;
        for slot in self.slots.values_mut() {
            if slot.response.is_none() {
                slot.response = Some((error(&slot.id), T::default()));
            }
        }
        self.release()
    }

    fn release(&mut self) -> Vec<(V1Response, T)> {
        let mut due = Vec::new();
        while let Some(mut first) = self.slots.first_entry() {
            match first.get_mut().response.take() {
                Some(response) => {
                    first.remove();
                    due.push(response);
                }
                None => break,
            }
        }
        due
    }

    fn start_ready(&mut self) -> Vec<(Ticket, V1Request)> {
        let mut start = Vec::new();
        while let Some((_, request)) = self.waiting.front() {
            let change = changes_state(request.call.method());
            let busy = self.running_change || (change && self.running_reads > 0);
            if busy {
                break;
            }
            if change {
                self.running_change = true;
            } else {
                self.running_reads += 1;
            }
            if let Some(next) = self.waiting.pop_front() {
                start.push(next);
            }
            if change {
                break;
            }
        }
        start
    }
}
