//! One webview connection's own state: readiness, visibility, back-pressure, the selected
//! session, the last `bb/state` it was sent and its queue of topics ready to leave.

use std::collections::VecDeque;
use std::sync::Arc;

use bb_protocol::v1::{Receive, StatePayload, V1Topic};

/// A webview connection as the host core sees it.
#[derive(Debug)]
pub(crate) struct Conn {
    /// `bb.init` completed.
    pub(crate) ready: bool,
    /// Not reported hidden (`bb.visibility`).
    pub(crate) visible: bool,
    /// The runtime could not hand it more (its outbound queue is full).
    pub(crate) stalled: bool,
    /// What its `bb/events` messages carry.
    pub(crate) receive: Receive,
    /// The session it selected.
    pub(crate) active: Option<String>,
    /// The last `bb/state` it was sent, shared with the topic that carries it (refreshed in
    /// place once the runtime wrote it).
    pub(crate) last_state: Option<Arc<StatePayload>>,
    /// Topics ready to leave. While the connection cannot receive, only state and connection
    /// updates wait here (coalesced to the latest of each); events wait in the tabs' rings.
    pub(crate) out: VecDeque<V1Topic>,
}

impl Conn {
    pub(crate) fn new() -> Self {
        Conn {
            ready: false,
            visible: true,
            stalled: false,
            receive: Receive::Events,
            active: None,
            last_state: None,
            out: VecDeque::new(),
        }
    }

    /// Whether topics may be handed to the runtime now.
    pub(crate) fn deliverable(&self) -> bool {
        self.ready && self.visible && !self.stalled
    }

    /// Queues a state or connection update; while the connection cannot receive, it replaces
    /// an older update of the same topic.
    pub(crate) fn emit(&mut self, topic: V1Topic) {
        if !self.deliverable() && !matches!(topic, V1Topic::Events(_)) {
            let same = |t: &V1Topic| std::mem::discriminant(t) == std::mem::discriminant(&topic);
            self.out.retain(|t| !same(t));
        }
        self.out.push_back(topic);
    }
}
