//! The runtime's webview connections: each accepted [`WebviewSink`] gets an id, forwarders
//! that merge its requests and write acknowledgements into one ordered stream for the loop,
//! and a non-blocking outbound side.
//!
//! The loop never waits on one connection's queue: a message that does not fit is kept (a
//! response in this connection's backlog, a topic back in the host core, which then holds
//! that connection's events in its tabs' rings) and a waiter reports when the queue has
//! room again. Other connections and the engine side go on meanwhile.

use std::collections::{BTreeMap, HashMap, VecDeque};

use bb_host::ConnId;
use bb_protocol::V1Message;
use bb_protocol::v1::{EventsPayload, V1Event, V1Topic};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::task::JoinHandle;

use crate::sink::{Inbound, WebviewSink};

/// What a connection reported.
#[derive(Debug)]
pub(crate) enum ConnEvent {
    /// A request or visibility change.
    Inbound(Inbound),
    /// The webview went away (its input closed or its output is gone).
    Closed,
    /// The bridge has written this many envelopes.
    Written(u64),
    /// The outbound queue has room again.
    Writable,
}

/// Why a topic was not handed over.
pub(crate) enum Refused {
    /// The queue is full: the caller keeps the topic and the connection is stalled.
    Full(Box<V1Topic>),
    /// The connection is gone.
    Closed,
}

/// Events to report as delivered once message `index` is written: (session, last event id).
type Marks = Vec<(String, String)>;

#[derive(Debug)]
struct Link {
    outbound: mpsc::Sender<V1Message>,
    acked: bool,
    sent: u64,
    written: u64,
    backlog: VecDeque<V1Message>,
    marks: VecDeque<(u64, Marks)>,
    /// Highest `seq` handed over per tab: a replayed message is not a new delivery.
    max_seq: HashMap<String, u64>,
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
}

impl Connections {
    pub(crate) fn new() -> Self {
        let (events_tx, events_rx) = mpsc::channel(256);
        Connections { next: 0, links: BTreeMap::new(), events_tx, events_rx }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.links.is_empty()
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
            let _ = events.send((id, ConnEvent::Closed)).await;
        })];
        let acked = written.is_some();
        if let Some(mut written) = written {
            let events = self.events_tx.clone();
            tasks.push(tokio::spawn(async move {
                while written.changed().await.is_ok() {
                    let n = *written.borrow_and_update();
                    if events.send((id, ConnEvent::Written(n))).await.is_err() {
                        return;
                    }
                }
            }));
        }
        let link = Link {
            outbound,
            acked,
            sent: 0,
            written: 0,
            backlog: VecDeque::new(),
            marks: VecDeque::new(),
            max_seq: HashMap::new(),
            waiting: false,
            tasks,
        };
        self.links.insert(id, link);
        id
    }

    /// The next report of any connection.
    pub(crate) async fn next(&mut self) -> Option<(ConnId, ConnEvent)> {
        self.events_rx.recv().await
    }

    /// Forgets a connection; dropping its sender lets the bridge's writer finish.
    pub(crate) fn close(&mut self, id: ConnId) {
        if let Some(link) = self.links.remove(&id) {
            for task in link.tasks {
                task.abort();
            }
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

    /// Hands a topic over. Events carry marks: the delivery of their last event per
    /// session is reported back through [`Connections::on_written`] (at once without acks).
    pub(crate) fn send_topic(&mut self, id: ConnId, topic: V1Topic) -> Result<Marks, Refused> {
        let Some(link) = self.links.get_mut(&id) else { return Err(Refused::Closed) };
        let marks = match &topic {
            V1Topic::Events(p) => new_marks(link, p),
            _ => Vec::new(),
        };
        match link.outbound.try_send(V1Message::Event(V1Event::new(topic))) {
            Ok(()) => {
                link.sent += 1;
                if link.acked && !marks.is_empty() {
                    link.marks.push_back((link.sent, marks));
                    return Ok(Vec::new());
                }
                Ok(marks)
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
            if let Some((_, marks)) = link.marks.pop_front() {
                done.extend(marks);
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

/// The (session, last event id) of a message the tab had not been sent before.
fn new_marks(link: &mut Link, payload: &EventsPayload) -> Marks {
    if let (Some(tab), Some(seq)) = (&payload.tab_id, payload.seq) {
        let max = link.max_seq.entry(tab.clone()).or_default();
        if seq <= *max {
            return Vec::new();
        }
        *max = seq;
    }
    payload
        .events
        .iter()
        .rev()
        .find(|e| !e.id.is_empty())
        .map(|e| vec![(payload.session_id.clone(), e.id.clone())])
        .unwrap_or_default()
}
