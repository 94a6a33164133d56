//! Tabs: the tab ↔ session bindings, each tab's delivery index (`seq`) and its bounded ring
//! of what it was sent, and the catch-up (replay or declared resync) of a tab that lagged.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt as _, HashSet, HashSetExt as _};

use bb_protocol::v1::{EventsPayload, Receive};

use crate::shape::{Shaped, shape};

/// A webview connection's id, chosen by the runtime.
pub type ConnId = u64;

/// The id of the tab a connection gets when it never names one.
pub fn implicit_tab(conn: ConnId) -> String {
    let mut id = String::new();
    write_implicit_tab(&mut id, conn);
    id
}

/// Writes the id of `conn`'s implicit tab into `id`, reusing its buffer.
pub(crate) fn write_implicit_tab(id: &mut String, conn: ConnId) {
    id.clear();
    id.push_str("implicit-");
    let _ = write!(id, "{conn}");
}

/// The `n`th string of `list`, added when `list` is shorter.
fn slot(list: &mut Vec<String>, n: usize) -> &mut String {
    if n == list.len() {
        list.push(String::new());
    }
    &mut list[n]
}

/// Bounds of one tab's ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RingLimits {
    pub(crate) messages: usize,
    pub(crate) bytes: usize,
    /// Bytes of messages already handed to the connection a ring keeps (for a reattach that
    /// lost what was in flight); older ones come back as a declared resync from the view.
    pub(crate) handed_bytes: usize,
    pub(crate) detached_tabs: usize,
    /// The most one message may take (what a message is cut to fit).
    pub(crate) message_bytes: usize,
}

#[derive(Debug, Clone)]
struct Stored {
    seq: u64,
    bytes: usize,
    /// The message as sent, but for its `tabId` (the ring's tab).
    payload: EventsPayload,
    /// The publish ordinal of the session's message it carries (`floor.rs`).
    ordinal: u64,
}

/// One tab.
#[derive(Debug)]
pub(crate) struct Tab {
    /// Its id, as every message recorded for it names it (shared, not copied per message).
    id: Arc<str>,
    /// The connection showing it; `None` once that connection closed (kept for a reattach).
    pub(crate) conn: Option<ConnId>,
    /// Explicit tabs (named by the webview) show one session; a connection's implicit tab
    /// shows every session that connection used without naming a tab.
    explicit: bool,
    sessions: BTreeSet<String>,
    /// Sessions this tab was ever sent events of: what a resync covers. Hashed: every
    /// message a tab records asks it (a search of an ordered set of 100 ids was ~10 string
    /// comparisons); [`Tab::seen`] sorts them where they are listed.
    seen: HashSet<String>,
    /// Per session, how many of its early messages (counted as [`Tabs`] numbers them) this
    /// tab already has: a tab that saw some of them gets only the rest.
    early_got: HashMap<String, u64>,
    next_seq: u64,
    /// Last `seq` handed to the connection.
    pub(crate) delivered: u64,
    ring: VecDeque<Stored>,
    ring_bytes: usize,
    /// When it was detached (a counter), to forget the oldest detached tabs first.
    detached_at: u64,
    /// What its webview receives; its ring holds messages as shaped for it.
    pub(crate) receive: Receive,
    /// Highest `seq` the runtime reported written to the webview.
    confirmed: u64,
    /// Per session, the publish ordinal of the last of its messages written to the webview
    /// (what this tab holds a resume position to).
    written: HashMap<String, u64>,
    /// Per session, a message the webview was sent nothing of (it changed nothing a webview
    /// receiving updates shows): `(seq, ordinal)`, written as soon as everything recorded up
    /// to `seq` is.
    skipped: HashMap<String, (u64, u64)>,
    /// Sessions whose events it was handed from the early store as published while no
    /// webview wanted updates (a webview receiving both then lacks their updates): binding
    /// one sends the session's view.
    needs_view: BTreeSet<String>,
}

impl Tab {
    fn new(id: &str, conn: ConnId, explicit: bool, receive: Receive) -> Self {
        Tab {
            id: Arc::from(id),
            receive,
            conn: Some(conn),
            explicit,
            sessions: BTreeSet::new(),
            seen: HashSet::new(),
            early_got: HashMap::new(),
            next_seq: 1,
            delivered: 0,
            ring: VecDeque::new(),
            ring_bytes: 0,
            detached_at: 0,
            confirmed: 0,
            written: HashMap::new(),
            skipped: HashMap::new(),
            needs_view: BTreeSet::new(),
        }
    }

    /// The publish ordinal of `session`'s last message written to the webview (0: none).
    fn written(&self, session: &str) -> u64 {
        self.written.get(session).copied().unwrap_or(0)
    }

    /// `session`'s messages up to `ordinal` count as written; whether that moved anything.
    fn credit(&mut self, session: &str, ordinal: u64) -> bool {
        match self.written.get_mut(session) {
            Some(w) if *w >= ordinal => false,
            Some(w) => {
                *w = ordinal;
                true
            }
            None => {
                self.written.insert(session.to_owned(), ordinal);
                true
            }
        }
    }

    /// The runtime wrote the messages up to `seq`: the sessions whose written ordinal moved
    /// go into `moved`. Messages the ring no longer holds move nothing (a later one, or the
    /// resync that replaces them, does).
    fn confirm(&mut self, seq: u64, moved: &mut HashSet<String>) {
        let seq = seq.min(self.next_seq.saturating_sub(1));
        if seq <= self.confirmed {
            return;
        }
        let from = self.confirmed;
        self.confirmed = seq;
        let start = self.ring.partition_point(|s| s.seq <= from);
        for stored in self.ring.range(start..).take_while(|s| s.seq <= seq) {
            let session = &*stored.payload.session_id;
            match self.written.get_mut(session) {
                Some(w) if *w >= stored.ordinal => {}
                Some(w) => {
                    *w = stored.ordinal;
                    moved.insert(session.to_owned());
                }
                None => {
                    self.written.insert(session.to_owned(), stored.ordinal);
                    moved.insert(session.to_owned());
                }
            }
        }
        if self.skipped.is_empty() {
            return;
        }
        let due: Vec<(String, u64)> = self
            .skipped
            .iter()
            .filter(|(_, (at, _))| *at <= seq)
            .map(|(s, (_, ordinal))| (s.clone(), *ordinal))
            .collect();
        for (session, ordinal) in due {
            self.skipped.remove(&session);
            if self.credit(&session, ordinal) {
                moved.insert(session);
            }
        }
    }

    /// Whether everything assigned a `seq` was handed to the connection.
    pub(crate) fn caught_up(&self) -> bool {
        self.delivered + 1 >= self.next_seq
    }

    /// Records a message, as its webview receives it (none, one or more messages), each
    /// under the next `seq` (kept in the ring within its bounds), and appends what is sent
    /// to `out`. `bytes`: its size without its updates.
    fn record(
        &mut self,
        payload: EventsPayload,
        bytes: usize,
        (limits, ordinal, moved): (RingLimits, u64, &mut HashSet<String>),
        out: &mut Vec<EventsPayload>,
    ) {
        if payload.resync == Some(true) {
            self.needs_view.remove(&*payload.session_id);
        }
        // Only the first message of a session makes the tab's copy of its id.
        let unseen =
            (!self.seen.contains(&*payload.session_id)).then(|| payload.session_id.to_string());
        match shape(payload, bytes, self.receive, limits.message_bytes) {
            Shaped::Unsent(payload) => {
                // Nothing to write: it counts as written once what was recorded before it
                // is. (A webview receiving updates was sent nothing of a message that
                // carried none: it has not seen the session yet, and binding it then sends
                // the session's view.)
                let session = payload.session_id.to_string();
                let before = self.next_seq - 1;
                if self.confirmed < before {
                    self.skipped.insert(session, (before, ordinal));
                } else if self.credit(&session, ordinal) {
                    moved.insert(session);
                }
                return;
            }
            Shaped::One(payload, bytes) => {
                let sent = self.keep(payload, bytes, (limits, ordinal));
                out.push(sent);
            }
            Shaped::Many(list) => {
                for (payload, bytes) in list {
                    let sent = self.keep(payload, bytes, (limits, ordinal));
                    out.push(sent);
                }
            }
        }
        if let Some(session) = unseen {
            self.seen.insert(session);
        }
    }

    /// Keeps one message in the ring under the next `seq`; returns it as sent (naming the
    /// tab).
    fn keep(
        &mut self,
        mut payload: EventsPayload,
        bytes: usize,
        (limits, ordinal): (RingLimits, u64),
    ) -> EventsPayload {
        let seq = self.next_seq;
        self.next_seq += 1;
        payload.seq = Some(seq);
        // The ring's copy names no tab (it is this one's; a replay names it).
        self.ring.push_back(Stored { seq, bytes, payload: payload.clone(), ordinal });
        payload.tab_id = Some(Arc::clone(&self.id));
        self.ring_bytes += bytes;
        self.trim(limits);
        payload
    }

    /// Keeps the ring within its bounds, dropping the oldest first: at most `messages` and
    /// `bytes` in all, and of the messages already handed to the connection at most
    /// `handed_bytes`. The newest message is always kept.
    fn trim(&mut self, limits: RingLimits) {
        while self.ring.len() > limits.messages.max(1)
            || (self.ring_bytes > limits.bytes && self.ring.len() > 1)
        {
            self.pop_oldest();
        }
        if self.ring_bytes <= limits.handed_bytes {
            return;
        }
        // What the connection was not handed yet stays (the ring's other bounds apply).
        let pending: usize =
            self.ring.iter().rev().take_while(|s| s.seq > self.delivered).map(|s| s.bytes).sum();
        while self.ring.len() > 1
            && self.ring.front().is_some_and(|s| s.seq <= self.delivered)
            && self.ring_bytes - pending > limits.handed_bytes
        {
            self.pop_oldest();
        }
    }

    fn pop_oldest(&mut self) {
        if let Some(old) = self.ring.pop_front() {
            self.ring_bytes -= old.bytes;
        }
    }

    /// Forgets every kept message (what the tab missed comes as a declared resync).
    fn clear_ring(&mut self) {
        self.ring.clear();
        self.ring_bytes = 0;
    }

    /// Whether it was sent anything of `session`.
    pub(crate) fn has_seen(&self, session: &str) -> bool {
        self.seen.contains(session)
    }

    /// Whether its webview, receiving updates, lacks the updates of `session`'s events it
    /// was handed (they were published while no webview wanted updates).
    pub(crate) fn needs_view(&self, session: &str) -> bool {
        self.needs_view.contains(session)
    }

    /// The sessions it was sent anything of, in the order of their ids.
    pub(crate) fn seen(&self) -> Vec<String> {
        let mut seen: Vec<String> = self.seen.iter().cloned().collect();
        seen.sort_unstable();
        seen
    }

    /// The messages after `delivered`, when the ring still holds all of them.
    fn missed(&self) -> Option<Vec<EventsPayload>> {
        let from = self.delivered + 1;
        if from >= self.next_seq {
            return Some(Vec::new());
        }
        let first = self.ring.front()?.seq;
        if first > from {
            return None;
        }
        let named =
            |s: &Stored| EventsPayload { tab_id: Some(Arc::clone(&self.id)), ..s.payload.clone() };
        Some(self.ring.iter().filter(|s| s.seq >= from).map(named).collect())
    }
}

/// Messages of a session no tab showed yet (e.g. events a new session streams before the
/// `bb.createSession` that binds it has answered), handed to the first tab that shows it.
/// Each message has a number (per session, never reused): a tab-less window's implicit tab
/// may have been sent the first ones directly, or a request's claim held the later ones from
/// it, so a tab is handed the ones after what it has ([`Tab::early_got`]).
#[derive(Debug)]
struct Early {
    /// Each message with its size, publish ordinal, and whether it was published while no
    /// webview wanted updates (its updates were not taken).
    messages: VecDeque<(EventsPayload, usize, u64, bool)>,
    bytes: usize,
    /// The number of the first message this store kept.
    start: u64,
    /// The number of `messages`' front: those from `start` up to it were dropped for the
    /// bound, so a tab that did not have them gets a resync instead.
    first: u64,
}

impl Early {
    fn new(start: u64) -> Self {
        Early { messages: VecDeque::new(), bytes: 0, start, first: start }
    }

    /// The number the next message gets.
    fn end(&self) -> u64 {
        self.first + self.messages.len() as u64
    }
}

/// Every tab, and which tabs show each session.
#[derive(Debug)]
pub(crate) struct Tabs {
    limits: RingLimits,
    tabs: HashMap<String, Tab>,
    by_session: HashMap<String, BTreeSet<String>>,
    early: HashMap<String, Early>,
    /// Per session, the number its next early message gets (kept while the store is empty).
    early_next: HashMap<String, u64>,
    /// Bytes of every session's early messages.
    early_bytes: usize,
    detach_clock: u64,
    /// What each connection's webview receives (absent: events).
    receive: HashMap<ConnId, Receive>,
    /// Sessions whose resume floor may have moved: a tab's written position moved, or a
    /// tab stopped showing it.
    moved: HashSet<String>,
}

/// What catching a tab up produced: messages to send (already recorded, in order).
pub(crate) type CatchUp = Vec<EventsPayload>;

impl Tabs {
    pub(crate) fn new(limits: RingLimits) -> Self {
        Tabs {
            limits,
            tabs: HashMap::new(),
            by_session: HashMap::new(),
            early: HashMap::new(),
            early_next: HashMap::new(),
            early_bytes: 0,
            detach_clock: 0,
            receive: HashMap::new(),
            moved: HashSet::new(),
        }
    }

    /// What `conn`'s webview receives from now on; its tabs that had a ring shaped otherwise
    /// lose it (what they missed comes as a resync). Returns the tabs whose shape changed.
    pub(crate) fn set_receive(&mut self, conn: ConnId, receive: Receive) -> Vec<String> {
        self.receive.insert(conn, receive);
        let mut changed = Vec::new();
        for (id, tab) in &mut self.tabs {
            if tab.conn == Some(conn) && tab.receive != receive {
                tab.receive = receive;
                tab.clear_ring();
                changed.push(id.clone());
            }
        }
        changed.sort();
        changed
    }

    /// Whether a tab (of an open or a closed connection) receives updates.
    pub(crate) fn any_receives_updates(&self) -> bool {
        self.tabs.values().any(|t| t.receive.updates())
    }

    pub(crate) fn get(&self, tab: &str) -> Option<&Tab> {
        self.tabs.get(tab)
    }

    /// The tab, created for `conn` or adopted by it (a recreated webview reattaching).
    pub(crate) fn attach(&mut self, tab_id: &str, conn: ConnId, explicit: bool) -> &mut Tab {
        let receive = self.receive.get(&conn).copied().unwrap_or_default();
        let tab = self
            .tabs
            .entry(tab_id.to_owned())
            .or_insert_with(|| Tab::new(tab_id, conn, explicit, receive));
        tab.conn = Some(conn);
        tab.explicit |= explicit;
        if tab.receive != receive {
            // Its ring holds messages shaped for another webview: what it missed is resynced.
            tab.receive = receive;
            tab.clear_ring();
        }
        tab
    }

    /// Binds an explicit tab to `session`, atomically: the tab leaves its previous session,
    /// and any other tab of the same connection showing `session` gives it up.
    pub(crate) fn bind(&mut self, conn: ConnId, tab_id: &str, session: &str) {
        self.attach(tab_id, conn, true);
        let others: Vec<String> = self
            .by_session
            .get(session)
            .into_iter()
            .flatten()
            .filter(|t| *t != tab_id && self.tabs.get(*t).is_some_and(|x| x.conn == Some(conn)))
            .cloned()
            .collect();
        for other in others {
            self.unbind(&other, session);
        }
        let previous: Vec<String> = match self.tabs.get(tab_id) {
            Some(t) if t.explicit => t.sessions.iter().filter(|s| *s != session).cloned().collect(),
            _ => Vec::new(),
        };
        for old in previous {
            self.unbind(tab_id, &old);
        }
        if let Some(tab) = self.tabs.get_mut(tab_id) {
            tab.sessions.insert(session.to_owned());
        }
        self.by_session.entry(session.to_owned()).or_default().insert(tab_id.to_owned());
        self.hand_early(tab_id, session);
    }

    /// Keeps a message of a session no tab shows, for the first tab that will. The store is
    /// bounded per session (a ring's bounds) and in total (one ring's bytes): beyond the
    /// total, the session holding the most gives up its oldest messages (a tab lacking
    /// those then gets a resync).
    pub(crate) fn keep_early(
        &mut self,
        payload: &EventsPayload,
        bytes: usize,
        (ordinal, without_updates): (u64, bool),
    ) {
        let limits = self.limits;
        let session = &*payload.session_id;
        // The session's id is copied only for its first message (a map's key).
        let next = match self.early_next.get_mut(session) {
            Some(next) => next,
            None => self.early_next.entry(session.to_owned()).or_insert(0),
        };
        let early = match self.early.get_mut(session) {
            Some(early) => early,
            None => self.early.entry(session.to_owned()).or_insert_with(|| Early::new(*next)),
        };
        *next += 1;
        early.messages.push_back((payload.clone(), bytes, ordinal, without_updates));
        early.bytes += bytes;
        self.early_bytes += bytes;
        while early.messages.len() > limits.messages.max(1) || early.bytes > limits.bytes {
            let Some((_, b, _, _)) = early.messages.pop_front() else { break };
            early.bytes -= b;
            self.early_bytes -= b;
            early.first += 1;
        }
        while self.early_bytes > limits.bytes {
            let Some(largest) = self.early.values_mut().max_by_key(|e| e.bytes) else { break };
            let Some((_, b, _, _)) = largest.messages.pop_front() else { break };
            largest.bytes -= b;
            self.early_bytes -= b;
            largest.first += 1;
        }
    }

    /// Records for `tab_id` (a tab-less connection's implicit tab) a message of a session
    /// no tab shows, just kept by [`Tabs::keep_early`]: first the session's early messages
    /// the tab lacks (its connection opened after the session began streaming), then this
    /// one. Appends what was recorded to `out`, in order. When the lacking ones were dropped
    /// for the store's bound, nothing is recorded and the tab's catch-up is a declared
    /// resync.
    pub(crate) fn record_early(
        &mut self,
        tab_id: &str,
        payload: EventsPayload,
        (bytes, ordinal): (usize, u64),
        out: &mut Vec<EventsPayload>,
    ) {
        let limits = self.limits;
        let session = &*payload.session_id;
        let this = self.early_next.get(session).map_or(0, |n| n.saturating_sub(1));
        let Some(tab) = self.tabs.get(tab_id) else { return };
        let got = tab.early_got.get(session).copied().unwrap_or(0);
        let lacks = self
            .early
            .get(session)
            .is_some_and(|e| got.max(e.start) < this && e.end() == this + 1 && e.first <= this);
        if lacks {
            let session = payload.session_id.clone();
            self.give_kept(tab_id, &session, out);
            return;
        }
        let Some(tab) = self.tabs.get_mut(tab_id) else { return };
        match tab.early_got.get_mut(session) {
            Some(got) => *got = this + 1,
            None => {
                tab.early_got.insert(session.to_owned(), this + 1);
            }
        }
        tab.record(payload, bytes, (limits, ordinal, &mut self.moved), out);
    }

    /// Takes a session's early messages out of the store.
    fn take_early(&mut self, session: &str) -> Option<Early> {
        let early = self.early.remove(session)?;
        self.early_bytes -= early.bytes;
        Some(early)
    }

    /// Records the session's early messages for a tab that starts showing it (those it was
    /// not sent yet); dropped ones it lacks make the tab lag behind its ring, so its catch-up
    /// is a declared resync.
    fn hand_early(&mut self, tab_id: &str, session: &str) {
        let Some(early) = self.take_early(session) else { return };
        self.give_early(tab_id, session, &early, &mut Vec::new());
    }

    /// Offers the early messages of a session no request claims any more to `tab_ids` (the
    /// implicit tabs of tab-less connections), keeping them for the first tab that binds it.
    pub(crate) fn offer_early(&mut self, tab_ids: &[String], session: &str) {
        for tab_id in tab_ids {
            self.give_kept(tab_id, session, &mut Vec::new());
        }
    }

    /// Records for `tab_id` the session's early messages it lacks, keeping them in the store
    /// for the first tab that binds the session; appends them to `out`.
    fn give_kept(&mut self, tab_id: &str, session: &str, out: &mut Vec<EventsPayload>) {
        let Some(early) = self.take_early(session) else { return };
        self.give_early(tab_id, session, &early, out);
        self.early_bytes += early.bytes;
        self.early.insert(session.to_owned(), early);
    }

    /// Records for `tab_id` the early messages it lacks; appends them to `out`.
    fn give_early(
        &mut self,
        tab_id: &str,
        session: &str,
        early: &Early,
        out: &mut Vec<EventsPayload>,
    ) {
        let limits = self.limits;
        let Some(tab) = self.tabs.get_mut(tab_id) else { return };
        let got = tab.early_got.get(session).copied().unwrap_or(0).max(early.start);
        let end = early.end();
        if got >= end {
            return;
        }
        tab.early_got.insert(session.to_owned(), end);
        if got < early.first {
            // A message stands for what was dropped: one the tab was never handed.
            tab.seen.insert(session.to_owned());
            tab.next_seq += 1;
            tab.clear_ring();
            return;
        }
        let skip = usize::try_from(got - early.first).unwrap_or(usize::MAX);
        let handed = early.messages.iter().skip(skip);
        if tab.receive.updates() && handed.clone().any(|(_, _, _, without)| *without) {
            tab.needs_view.insert(session.to_owned());
        }
        for (payload, bytes, ordinal, _) in handed {
            let at = (limits, *ordinal, &mut self.moved);
            tab.record(payload.clone(), *bytes, at, out);
        }
    }

    /// Whether any tab was sent events of `session`.
    pub(crate) fn seen_by_any(&self, session: &str) -> bool {
        self.tabs.values().any(|t| t.seen.contains(session))
    }

    /// Whether `tab` shows `session`.
    pub(crate) fn shows(&self, tab: &str, session: &str) -> bool {
        self.by_session.get(session).is_some_and(|t| t.contains(tab))
    }

    /// Whether some tab shows `session`.
    pub(crate) fn is_bound(&self, session: &str) -> bool {
        self.by_session.get(session).is_some_and(|t| !t.is_empty())
    }

    /// Routes `session` to the connection's implicit tab, unless a tab of the connection
    /// already shows it.
    pub(crate) fn bind_implicit(&mut self, conn: ConnId, session: &str) {
        let shown = self
            .by_session
            .get(session)
            .into_iter()
            .flatten()
            .any(|t| self.tabs.get(t).is_some_and(|x| x.conn == Some(conn)));
        if shown {
            return;
        }
        let id = implicit_tab(conn);
        self.attach(&id, conn, false).sessions.insert(session.to_owned());
        self.by_session.entry(session.to_owned()).or_default().insert(id.clone());
        self.hand_early(&id, session);
    }

    fn unbind(&mut self, tab_id: &str, session: &str) {
        if let Some(tab) = self.tabs.get_mut(tab_id) {
            tab.sessions.remove(session);
        }
        self.moved.insert(session.to_owned());
        if let Some(set) = self.by_session.get_mut(session) {
            set.remove(tab_id);
            if set.is_empty() {
                self.by_session.remove(session);
            }
        }
    }

    /// A session is gone: no tab shows it any more.
    pub(crate) fn remove_session(&mut self, session: &str) {
        self.moved.remove(session);
        self.take_early(session);
        self.early_next.remove(session);
        for tab in self.by_session.remove(session).into_iter().flatten() {
            if let Some(t) = self.tabs.get_mut(&tab) {
                t.sessions.remove(session);
            }
        }
        for tab in self.tabs.values_mut() {
            tab.seen.remove(session);
            tab.early_got.remove(session);
            tab.written.remove(session);
            tab.skipped.remove(session);
        }
    }

    /// The tabs `session`'s events go to: the tabs bound to it (`true`), or, when none is,
    /// the implicit tabs of the tab-less connections (`false`, see [`Tabs::tabless`]); then
    /// the caller keeps the message for the first tab that will show the session. Written
    /// into `targets`, reusing its strings.
    pub(crate) fn targets(
        &self,
        session: &str,
        open: &[ConnId],
        targets: &mut Vec<String>,
    ) -> bool {
        let mut n = 0;
        let bound = match self.by_session.get(session) {
            Some(tabs) if !tabs.is_empty() => {
                for tab in tabs {
                    let id = slot(targets, n);
                    id.clear();
                    id.push_str(tab);
                    n += 1;
                }
                true
            }
            _ => {
                for conn in open.iter().filter(|c| !self.names_tab(**c)) {
                    write_implicit_tab(slot(targets, n), *conn);
                    n += 1;
                }
                false
            }
        };
        targets.truncate(n);
        bound
    }

    /// Whether `conn` named a tab (it is not tab-less).
    fn names_tab(&self, conn: ConnId) -> bool {
        self.tabs.values().any(|t| t.explicit && t.conn == Some(conn))
    }

    /// Whether a connection in `open` is tab-less (see [`Tabs::tabless`]).
    pub(crate) fn any_tabless(&self, open: &[ConnId]) -> bool {
        open.iter().any(|c| !self.names_tab(*c))
    }

    /// The implicit tab of every open connection in `open` that never named a tab (a
    /// webview that knows nothing of tabs sees every session no tab shows, as before).
    pub(crate) fn tabless(&self, open: &[ConnId]) -> Vec<String> {
        open.iter().filter(|c| !self.names_tab(**c)).map(|c| implicit_tab(*c)).collect()
    }

    /// Records `payload` for `tab_id` under its next `seq`; appends the messages as sent to
    /// `out`.
    pub(crate) fn record(
        &mut self,
        tab_id: &str,
        payload: EventsPayload,
        (bytes, ordinal): (usize, u64),
        out: &mut Vec<EventsPayload>,
    ) {
        let limits = self.limits;
        if let Some(tab) = self.tabs.get_mut(tab_id) {
            tab.record(payload, bytes, (limits, ordinal, &mut self.moved), out);
        }
    }

    pub(crate) fn tab_mut(&mut self, tab: &str) -> Option<&mut Tab> {
        self.tabs.get_mut(tab)
    }

    /// The explicit tab of `conn` that shows `session`, if one does.
    pub(crate) fn showing(&self, conn: ConnId, session: &str) -> Option<&str> {
        self.tabs
            .iter()
            .find(|(_, t)| t.conn == Some(conn) && t.explicit && t.sessions.contains(session))
            .map(|(id, _)| id.as_str())
    }

    /// Tabs shown by `conn`, by id.
    pub(crate) fn of_conn(&self, conn: ConnId) -> Vec<String> {
        let mut ids: Vec<String> = self
            .tabs
            .iter()
            .filter(|(_, t)| t.conn == Some(conn))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// Sets where a reattaching webview says it is (`lastSeen`): never past what was sent;
    /// a tab the bridge does not know yet continues after `seq` (its sessions are bound
    /// again when the webview selects them).
    pub(crate) fn resume(&mut self, conn: ConnId, tab_id: &str, seen: u64) {
        let tab = self.attach(tab_id, conn, true);
        if tab.next_seq == 1 && tab.ring.is_empty() {
            tab.next_seq = seen.saturating_add(1);
        }
        tab.delivered = seen.min(tab.next_seq - 1);
    }

    /// A connection that names its tabs before anything reached it (`bb.init({lastSeen})` to
    /// a restarted bridge) loses its implicit tab: that tab only recorded, while the webview
    /// was not ready, sessions no tab showed — a restarted bridge resumes saved streams on its
    /// own — and the early store still holds them for the named tab that selects each, so
    /// sending both would show every such event twice.
    pub(crate) fn drop_unsent_implicit(&mut self, conn: ConnId) {
        let id = implicit_tab(conn);
        let unsent = self.tabs.get(&id).is_some_and(|t| t.conn == Some(conn) && t.delivered == 0);
        let named = self.tabs.values().any(|t| t.explicit && t.conn == Some(conn));
        if !(unsent && named) {
            return;
        }
        if let Some(tab) = self.tabs.remove(&id) {
            for s in tab.sessions {
                self.unbind(&id, &s);
            }
        }
    }

    /// What `tab_id` missed: the ring's messages after its `delivered`, or — when the ring
    /// no longer holds them all — one declared resync per session it showed, built by
    /// `resync` (recorded under new `seq`s). Marks everything delivered.
    pub(crate) fn catch_up(
        &mut self,
        tab_id: &str,
        mut resync: impl FnMut(&str, Receive) -> Option<(EventsPayload, usize, u64)>,
    ) -> CatchUp {
        let Some(tab) = self.tabs.get_mut(tab_id) else { return Vec::new() };
        if let Some(missed) = tab.missed() {
            tab.delivered = tab.next_seq - 1;
            tab.trim(self.limits);
            return missed;
        }
        let sessions = tab.seen();
        let receive = tab.receive;
        let mut out = Vec::new();
        for session in sessions {
            if let Some((payload, bytes, ordinal)) = resync(&session, receive) {
                let limits = self.limits;
                if let Some(tab) = self.tabs.get_mut(tab_id) {
                    tab.record(payload, bytes, (limits, ordinal, &mut self.moved), &mut out);
                }
            }
        }
        if let Some(tab) = self.tabs.get_mut(tab_id) {
            tab.delivered = tab.next_seq - 1;
            tab.trim(self.limits);
        }
        out
    }

    /// The connection closed: its tabs wait detached for a reattach (`bb.init({lastSeen})`
    /// from a recreated webview), the oldest detached ones forgotten beyond the bound.
    pub(crate) fn detach(&mut self, conn: ConnId) {
        for tab in self.tabs.values_mut().filter(|t| t.conn == Some(conn)) {
            self.detach_clock += 1;
            tab.conn = None;
            tab.detached_at = self.detach_clock;
        }
        let mut detached: Vec<(u64, String)> = self
            .tabs
            .iter()
            .filter(|(_, t)| t.conn.is_none())
            .map(|(id, t)| (t.detached_at, id.clone()))
            .collect();
        if detached.len() <= self.limits.detached_tabs {
            return;
        }
        detached.sort();
        let excess = detached.len() - self.limits.detached_tabs;
        for (_, id) in detached.into_iter().take(excess) {
            if let Some(tab) = self.tabs.remove(&id) {
                for s in tab.sessions {
                    self.unbind(&id, &s);
                }
            }
        }
    }

    /// The most bytes any one tab's ring holds.
    pub(crate) fn max_ring_bytes(&self) -> usize {
        self.tabs.values().map(|t| t.ring_bytes).max().unwrap_or(0)
    }

    /// The runtime wrote `tab_id`'s messages up to `seq` to its webview.
    pub(crate) fn written(&mut self, tab_id: &str, seq: u64) {
        if let Some(tab) = self.tabs.get_mut(tab_id) {
            tab.confirm(seq, &mut self.moved);
        }
    }

    /// `sessions`' floors may have moved (the tabs they follow changed).
    pub(crate) fn mark_moved(&mut self, sessions: Vec<String>) {
        self.moved.extend(sessions);
    }

    /// The sessions whose floor may have moved since the last call.
    pub(crate) fn take_moved(&mut self, into: &mut Vec<String>) {
        into.extend(self.moved.drain());
    }

    /// The publish ordinal up to which every tab `session`'s events go to (see
    /// [`Tabs::targets`]; detached tabs included) was written its messages; `None` when no
    /// tab shows the session.
    /// `name`: a buffer for the implicit tabs' ids.
    pub(crate) fn floor(&self, session: &str, open: &[ConnId], name: &mut String) -> Option<u64> {
        let written = |t: &Tab| t.written(session);
        match self.by_session.get(session) {
            Some(tabs) if !tabs.is_empty() => {
                tabs.iter().filter_map(|t| self.tabs.get(t)).map(written).min()
            }
            _ => open
                .iter()
                .filter(|c| !self.names_tab(**c))
                .filter_map(|c| {
                    write_implicit_tab(name, *c);
                    self.tabs.get(name.as_str())
                })
                .map(written)
                .min(),
        }
    }

    /// Last `seq` sent per tab (for tests and diagnostics).
    pub(crate) fn positions(&self) -> BTreeMap<String, u64> {
        self.tabs.iter().map(|(id, t)| (id.clone(), t.next_seq - 1)).collect()
    }
}
