//! A published message as each tab gets it, by what its webview receives
//! (`bb.init({receive})`): engine events as before updates existed, the updates the host's
//! reducers made of them (events left empty), or both; split so no message outgrows the
//! limit.

use bb_protocol::v1::{Events, EventsPayload, Receive, Updates};
use serde_json::value::RawValue;

use crate::fit::payload_bytes;

/// Bytes `,"updates":` adds to a message, besides the list.
const UPDATES_FIELD: usize = 11;

/// What a tab receiving some `receive` records of a published message.
#[derive(Debug)]
pub(crate) enum Shaped {
    /// Nothing: the webview's view does not change (the message, given back).
    Unsent(EventsPayload),
    /// One message and its serialized size: the usual case, without a list.
    One(EventsPayload, usize),
    /// Several, in order, each with its serialized size.
    Many(Vec<(EventsPayload, usize)>),
}

/// `payload` as a tab receiving `receive` records it: none, one or more messages with their
/// serialized sizes. `bytes` is the payload's size without its `updates`; `budget` the most
/// a message may take.
pub(crate) fn shape(
    mut payload: EventsPayload,
    bytes: usize,
    receive: Receive,
    budget: usize,
) -> Shaped {
    match receive {
        Receive::Events => {
            payload.updates = None;
            Shaped::One(payload, bytes)
        }
        Receive::Updates => {
            if payload.updates.as_ref().is_none_or(Updates::is_empty)
                && payload.resync != Some(true)
            {
                // Nothing for this webview: its view does not change.
                return Shaped::Unsent(payload);
            }
            payload.events = Events::default();
            payload.view = None;
            updates_only(payload, budget)
        }
        Receive::Both => {
            let Some(updates) = payload.updates.take().filter(|u| !u.is_empty()) else {
                return Shaped::One(payload, bytes);
            };
            let together = bytes + UPDATES_FIELD + updates.written_len();
            if together <= budget {
                payload.updates = Some(updates);
                return Shaped::One(payload, together);
            }
            let mut rest = payload.clone();
            rest.events = Events::default();
            rest.view = None;
            rest.updates = Some(updates);
            let mut out = vec![(payload, bytes)];
            match updates_only(rest, budget) {
                Shaped::One(p, b) => out.push((p, b)),
                Shaped::Many(more) => out.extend(more),
                Shaped::Unsent(_) => {}
            }
            Shaped::Many(out)
        }
    }
}

/// A message carrying only updates, cut into as many as the budget needs (each update fits
/// one alone: the host keeps larger ones aside); only the first keeps `resync`.
fn updates_only(mut payload: EventsPayload, budget: usize) -> Shaped {
    let updates = payload.updates.take().unwrap_or_default();
    let base = payload_bytes(&payload) + UPDATES_FIELD;
    if base + updates.written_len() <= budget {
        let bytes = base + updates.written_len();
        payload.updates = Some(updates);
        return Shaped::One(payload, bytes);
    }
    let mut groups: Vec<Vec<Box<RawValue>>> = vec![Vec::new()];
    let mut size = 2;
    for u in updates.written() {
        let len = u.get().len() + 1;
        if size + len + base > budget
            && let Some(last) = groups.last()
            && !last.is_empty()
        {
            groups.push(Vec::new());
            size = 2;
        }
        if let Some(last) = groups.last_mut() {
            last.push(u.clone());
        }
        size += len;
    }
    let mut out = Vec::with_capacity(groups.len());
    for (i, group) in groups.into_iter().enumerate() {
        let mut message = payload.clone();
        if i > 0 {
            message.resync = None;
        }
        message.updates = Some(Updates::from_written(group));
        let bytes = payload_bytes(&message);
        out.push((message, bytes));
    }
    Shaped::Many(out)
}

#[cfg(test)]
mod tests {
    use bb_protocol::v1::{AssistantDelta, EventsPayload, Receive, Updates, WebviewUpdate};

    use super::Shaped;
    use crate::fit::payload_bytes;

    /// The messages `super::shape` makes, as a list (none when it sends nothing).
    fn shape(
        m: EventsPayload,
        bytes: usize,
        receive: Receive,
        budget: usize,
    ) -> Vec<(EventsPayload, usize)> {
        match super::shape(m, bytes, receive, budget) {
            Shaped::Unsent(_) => Vec::new(),
            Shaped::One(m, bytes) => vec![(m, bytes)],
            Shaped::Many(list) => list,
        }
    }

    fn message(text_bytes: usize, deltas: usize) -> (EventsPayload, usize) {
        let delta = |i: u64| {
            WebviewUpdate::AssistantDelta(AssistantDelta {
                key: "b1".into(),
                at: i * text_bytes as u64,
                delta: "x".repeat(text_bytes).into(),
            })
        };
        let updates: Vec<WebviewUpdate<'_>> = (0..deltas as u64).map(delta).collect();
        let payload =
            EventsPayload { resync: Some(true), ..EventsPayload::new("s", Default::default()) };
        let bytes = payload_bytes(&payload);
        (EventsPayload { updates: Some(Updates::from_items(&updates)), ..payload }, bytes)
    }

    #[test]
    fn each_receiver_gets_its_part_under_the_budget() {
        let (m, bytes) = message(100, 3);
        let events = shape(m.clone(), bytes, Receive::Events, 10_000);
        assert_eq!(events.len(), 1);
        assert!(events[0].0.updates.is_none());
        let updates = shape(m.clone(), bytes, Receive::Updates, 10_000);
        assert_eq!(updates.len(), 1);
        assert_eq!(updates[0].0.updates.as_ref().map(Updates::len), Some(3));
        assert_eq!(updates[0].1, payload_bytes(&updates[0].0));
        // Too many for one message: cut, each under the budget, `resync` on the first only.
        let (m, bytes) = message(1000, 10);
        for receive in [Receive::Updates, Receive::Both] {
            let parts = shape(m.clone(), bytes, receive, 3_000);
            assert!(parts.len() >= 4, "{receive:?}: {}", parts.len());
            for (i, (p, size)) in parts.iter().enumerate() {
                assert_eq!(*size, payload_bytes(p), "{receive:?} part {i}");
                assert!(*size <= 3_000, "{receive:?} part {i}: {size}");
            }
            let n: usize =
                parts.iter().filter_map(|(p, _)| p.updates.as_ref()).map(Updates::len).sum();
            assert_eq!(n, 10);
            let resyncs = parts.iter().filter(|(p, _)| p.resync == Some(true)).count();
            assert_eq!(resyncs, if receive == Receive::Both { 2 } else { 1 });
        }
    }

    #[test]
    fn an_updates_receiver_skips_messages_that_change_nothing() {
        let (mut m, bytes) = message(1, 0);
        m.resync = None;
        assert!(shape(m, bytes, Receive::Updates, 10_000).is_empty());
    }
}
