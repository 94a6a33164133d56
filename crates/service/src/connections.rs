//! The runtime's webview connections: each accepted [`WebviewSink`] gets an id, forwarders
//! that merge its requests and write acknowledgements into one ordered stream for the loop,
//! and a non-blocking outbound side.
//!
//! The loop never waits on one connection's queue: a message that does not fit is kept (a
//! response in this connection's backlog, a topic back in the host core, which then holds
//! that connection's events in its tabs' rings) and a waiter reports when the queue has
//! room again. Other connections and the engine side go on meanwhile.
//!
//! Closing a connection whose bridge acknowledges writes does not drop what it was handed:
//! the acknowledgement task gets the marks still pending and waits (at most
//! [`DRAIN_WAIT`]) for the writer to report them written, or to finish; it then reports
//! [`ConnEvent::Drained`] with the marks of every envelope that was written, so the host
//! core hears of each write (a resume position never lags what every webview got). The
//! runtime does not end while a closed connection drains.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bb_host::ConnId;
use bb_protocol::V1Message;
use bb_protocol::v1::{EventsPayload, V1Event, V1Topic};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::sink::{Inbound, WebviewSink};

/// What a connection reported.
#[derive(Debug)]
pub(crate) enum ConnEvent {
    /// A request or visibility change.
    Inbound(Inbound),
    /// The webview's input closed: no more requests; what is in flight is still answered.
    InputClosed,
    /// The webview went away (its output is gone).
    Closed,
    /// The bridge has written this many envelopes.
    Written(u64),
    /// The outbound queue has room again.
    Writable,
    /// A closed connection's writer reported (or the wait ended): the marks of the envelopes
    /// it wrote after the close.
    Drained(Marks),
}

/// The longest a closed connection waits for its writer to acknowledge what it was handed.
pub(crate) const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// Why a topic was not handed over.
pub(crate) enum Refused {
    /// The queue is full: the caller keeps the topic and the connection is stalled.
    Full(Box<V1Topic>),
    /// The connection is gone.
    Closed,
}

/// A `bb/events` message to report written once its envelope is: (tab, `seq`).
pub(crate) type Mark = (Arc<str>, u64);

/// Messages reported written together.
pub(crate) type Marks = Vec<Mark>;

/// Marks waiting for their envelope's index to be written (one per message, so the queue
/// holds them without a list each).
type Pending = VecDeque<(u64, Mark)>;

#[derive(Debug)]
struct Link {
    outbound: mpsc::Sender<V1Message>,
    acked: bool,
    sent: u64,
    written: u64,
    backlog: VecDeque<V1Message>,
    marks: Pending,
    /// Hands the pending marks to the acknowledgement task on close.
    drain: Option<oneshot::Sender<Pending>>,
    waiting: bool,
    tasks: Vec<JoinHandle<()>>,
}

/// Every open connection.
#[derive(Debug)]
pub(crate) struct Connections {
    next: ConnId,
    links: BTreeMap<ConnId, Link>,
    events_tx: mpsc::Sender<(ConnId, ConnEvent)>,
    events_rx: mpsc::Receiver<(ConnId, ConnEvent)>,
    /// Closed connections whose written envelopes are still being confirmed.
    draining: usize,
}

impl Connections {
    pub(crate) fn new() -> Self {
        let (events_tx, events_rx) = mpsc::channel(256);
        Connections { next: 0, links: BTreeMap::new(), events_tx, events_rx, draining: 0 }
    }

    /// No connection is open and none drains.
    pub(crate) fn is_empty(&self) -> bool {
        self.links.is_empty() && self.draining == 0
    }

    /// A closed connection finished draining ([`ConnEvent::Drained`]).
    pub(crate) fn drained(&mut self) {
        self.draining = self.draining.saturating_sub(1);
    }

    /// Starts serving `sink`; returns its id.
    pub(crate) fn accept(&mut self, sink: WebviewSink) -> ConnId {
        let id = self.next;
        self.next += 1;
        let WebviewSink { mut inbound, outbound, written } = sink;
        let events = self.events_tx.clone();
        let mut tasks = vec![tokio::spawn(async move {
            while let Some(msg) = inbound.recv().await {
                if events.send((id, ConnEvent::Inbound(msg))).await.is_err() {
                    return;
                }
            }
            let _ = events.send((id, ConnEvent::InputClosed)).await;
        })];
        let acked = written.is_some();
        let mut drain = None;
        if let Some(written) = written {
            let (tx, rx) = oneshot::channel();
            drain = Some(tx);
            tasks.push(tokio::spawn(acknowledge(id, written, rx, self.events_tx.clone())));
        }
        let link = Link {
            outbound,
            acked,
            sent: 0,
            written: 0,
            backlog: VecDeque::new(),
            marks: VecDeque::new(),
            drain,
            waiting: false,
            tasks,
        };
        self.links.insert(id, link);
        id
    }

    /// Envelopes waiting to be written, over every connection (queued and held back).
    pub(crate) fn queue_depth(&self) -> u64 {
        let waiting: usize = self
            .links
            .values()
            .map(|l| l.outbound.max_capacity() - l.outbound.capacity() + l.backlog.len())
            .sum();
        u64::try_from(waiting).unwrap_or(u64::MAX)
    }

    /// The next report of any connection.
    pub(crate) async fn next(&mut self) -> Option<(ConnId, ConnEvent)> {
        self.events_rx.recv().await
    }

    /// Forgets a connection; dropping its sender lets the bridge's writer finish. Marks of
    /// envelopes handed over but not yet acknowledged go to the acknowledgement task, which
    /// reports the written ones ([`ConnEvent::Drained`]).
    pub(crate) fn close(&mut self, id: ConnId) {
        let Some(mut link) = self.links.remove(&id) else { return };
        let ack = link.drain.take().filter(|_| !link.marks.is_empty());
        let ack_task = if ack.is_some() { link.tasks.get(1).map(JoinHandle::id) } else { None };
        for task in link.tasks {
            if Some(task.id()) != ack_task {
                task.abort();
            }
        }
        if let Some(ack) = ack
            && ack.send(std::mem::take(&mut link.marks)).is_ok()
        {
            self.draining += 1;
        }
    }

    /// Sends a response, in order after any response still waiting for room. `false` when
    /// the response had to wait (the connection is to be stalled).
    pub(crate) fn send_response(&mut self, id: ConnId, message: V1Message) -> bool {
        let Some(link) = self.links.get_mut(&id) else {
            tracing::debug!(conn = id, "webview gone before a response could be sent");
            return true;
        };
        if !link.backlog.is_empty() {
            link.backlog.push_back(message);
            return false;
        }
        match link.outbound.try_send(message) {
            Ok(()) => {
                link.sent += 1;
                true
            }
            Err(TrySendError::Full(message)) => {
                link.backlog.push_back(message);
                self.wait_for_room(id);
                false
            }
            Err(TrySendError::Closed(_)) => {
                self.report_closed(id);
                true
            }
        }
    }

    /// Hands a topic over. Events carry marks: their tab and `seq`, reported back through
    /// [`Connections::on_written`] once written (at once without acks).
    pub(crate) fn send_topic(
        &mut self,
        id: ConnId,
        topic: V1Topic,
    ) -> Result<Option<Mark>, Refused> {
        let Some(link) = self.links.get_mut(&id) else { return Err(Refused::Closed) };
        let mark = match &topic {
            V1Topic::Events(p) => mark_of(p),
            _ => None,
        };
        match link.outbound.try_send(V1Message::Event(V1Event::new(topic))) {
            Ok(()) => {
                link.sent += 1;
                if link.acked
                    && let Some(mark) = mark
                {
                    link.marks.push_back((link.sent, mark));
                    return Ok(None);
                }
                Ok(mark)
            }
            Err(TrySendError::Full(V1Message::Event(event))) => {
                self.wait_for_room(id);
                Err(Refused::Full(Box::new(event.topic)))
            }
            Err(TrySendError::Full(_)) => Err(Refused::Closed),
            Err(TrySendError::Closed(_)) => {
                self.report_closed(id);
                Err(Refused::Closed)
            }
        }
    }

    /// The bridge wrote `n` envelopes of `id`: the marks now delivered.
    pub(crate) fn on_written(&mut self, id: ConnId, n: u64) -> Marks {
        let Some(link) = self.links.get_mut(&id) else { return Vec::new() };
        link.written = link.written.max(n);
        let mut done = Vec::new();
        while link.marks.front().is_some_and(|(at, _)| *at <= link.written) {
            if let Some((_, mark)) = link.marks.pop_front() {
                done.push(mark);
            }
        }
        done
    }

    /// The queue of `id` has room: sends waiting responses. `true` when none is left (the
    /// connection may take topics again).
    pub(crate) fn on_writable(&mut self, id: ConnId) -> bool {
        let Some(link) = self.links.get_mut(&id) else { return false };
        link.waiting = false;
        while let Some(message) = link.backlog.pop_front() {
            match link.outbound.try_send(message) {
                Ok(()) => link.sent += 1,
                Err(TrySendError::Full(message)) => {
                    link.backlog.push_front(message);
                    self.wait_for_room(id);
                    return false;
                }
                Err(TrySendError::Closed(_)) => {
                    self.report_closed(id);
                    return false;
                }
            }
        }
        true
    }

    /// Reports `Writable` once a quarter of the queue is free.
    fn wait_for_room(&mut self, id: ConnId) {
        let Some(link) = self.links.get_mut(&id) else { return };
        if link.waiting {
            return;
        }
        link.waiting = true;
        let outbound = link.outbound.clone();
        let events = self.events_tx.clone();
        let room = (outbound.max_capacity() / 4).max(1);
        link.tasks.push(tokio::spawn(async move {
            let free = outbound.reserve_many(room).await.is_ok();
            let report = if free { ConnEvent::Writable } else { ConnEvent::Closed };
            let _ = events.send((id, report)).await;
        }));
    }

    fn report_closed(&self, id: ConnId) {
        let events = self.events_tx.clone();
        tokio::spawn(async move {
            let _ = events.send((id, ConnEvent::Closed)).await;
        });
    }
}

/// Forwards the bridge's write count; once the connection closed (`close` brings the
/// pending marks), waits at most [`DRAIN_WAIT`] for them to be written, then reports the
/// written ones.
async fn acknowledge(
    id: ConnId,
    mut written: watch::Receiver<u64>,
    mut close: oneshot::Receiver<Pending>,
    events: mpsc::Sender<(ConnId, ConnEvent)>,
) {
    let mut writer_done = false;
    let pending = loop {
        tokio::select! {
            changed = written.changed(), if !writer_done => {
                if changed.is_err() {
                    writer_done = true;
                    continue;
                }
                let n = *written.borrow_and_update();
                if events.send((id, ConnEvent::Written(n))).await.is_err() {
                    return;
                }
            }
            pending = &mut close => match pending {
                Ok(pending) => break pending,
                Err(_) => return,
            },
        }
    };
    let mut pending = pending;
    let mut done = Vec::new();
    let deadline = tokio::time::sleep(DRAIN_WAIT);
    tokio::pin!(deadline);
    loop {
        let n = *written.borrow_and_update();
        while pending.front().is_some_and(|(at, _)| *at <= n) {
            if let Some((_, mark)) = pending.pop_front() {
                done.push(mark);
            }
        }
        if pending.is_empty() || writer_done {
            break;
        }
        tokio::select! {
            changed = written.changed() => writer_done = changed.is_err(),
            () = &mut deadline => {
                tracing::warn!(
                    conn = id,
                    unconfirmed = pending.len(),
                    "the webview writer did not confirm every envelope in time after the close"
                );
                break;
            }
        }
    }
    let _ = events.send((id, ConnEvent::Drained(done))).await;
}

/// The (tab, `seq`) of a message.
fn mark_of(payload: &EventsPayload) -> Option<Mark> {
    match (&payload.tab_id, payload.seq) {
        (Some(tab), Some(seq)) => Some((tab.clone(), seq)),
        _ => None,
    }
}
