//! The verdict: what each window ended with against what the engine sent on the session's
//! stream. Every engine event from the session's first prompt on must have reached the
//! window once: as itself, merged into a later coalesced delta of the same message (its text
//! part of that delta's, in order), or covered by a declared resync (a `resync: true` message,
//! or a gap the bridge declared with a `stream.gap` item). An event sent twice by one life of
//! a bridge is a duplicate; one sent again by a restarted bridge (its saved stream position
//! lags what it wrote, at-least-once by design) is counted as redelivered: the page drops
//! ids it has shown. Pure: no IO.

use std::collections::HashMap;

use super::proxy::SessionTruth;
use super::window::SessionLog;

/// The counts of one window's session, or of a whole run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Tally {
    /// Engine events the window should have (from the session's first prompt on).
    pub(crate) checked: u64,
    /// Delivered as themselves.
    pub(crate) delivered: u64,
    /// Merged into a later coalesced delta.
    pub(crate) merged: u64,
    /// Not delivered, covered by a declared resync or gap.
    pub(crate) declared: u64,
    /// Declared resyncs and gaps received.
    pub(crate) resyncs: u64,
    /// Not delivered and not declared.
    pub(crate) lost: u64,
    /// Delivered twice by one life of the bridge.
    pub(crate) duplicated: u64,
    /// Sent again by a restarted bridge (dropped by id).
    pub(crate) redelivered: u64,
    /// A coalesced delta whose text is not the merged texts of the deltas before it.
    pub(crate) garbled: u64,
}

impl Tally {
    pub(crate) fn add(&mut self, o: Tally) {
        self.checked += o.checked;
        self.delivered += o.delivered;
        self.merged += o.merged;
        self.declared += o.declared;
        self.resyncs += o.resyncs;
        self.lost += o.lost;
        self.duplicated += o.duplicated;
        self.redelivered += o.redelivered;
        self.garbled += o.garbled;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Missing,
    Delivered(u32),
    Merged,
    Declared,
}

/// Whether the turn whose prompt the engine got after the session's first `sent_at` events
/// ended for a window, from what it got from item `from` on: the turn's `run_finished` (the
/// engine's first after `sent_at`) reached it, or a declared resync whose view covers it did
/// (a window that binds a session another window showed first, after a bridge restart, is
/// sent the view, not the events it missed). An earlier turn's `run_finished` sent again by a
/// restarted bridge does not end it.
pub(crate) fn turn_ended(
    truth: Option<&SessionTruth>,
    sent_at: usize,
    log: &SessionLog,
    from: usize,
) -> bool {
    let Some(truth) = truth else { return false };
    let Some(end) = truth.events.iter().skip(sent_at).position(|e| e.kind == "run_finished") else {
        return false;
    };
    let covers =
        |id: &str| truth.events.iter().position(|e| e.id == id).is_some_and(|i| i >= end + sent_at);
    log.items.iter().skip(from).any(|g| g.kind == "run_finished" && covers(&g.id))
        || log.covered.iter().any(|(_, id)| covers(id))
}

/// Checks one window's log of a session against the engine's: the counts, and the lost
/// and the duplicated events (`seq:type`, for the run's report). `upto` bounds the events
/// checked: a session the soak deleted is checked up to what the engine had sent when the
/// bridge was told to delete it (what it sends after, ending the stopped turn, goes with the
/// session).
pub(crate) fn verdict(
    truth: &SessionTruth,
    upto: Option<usize>,
    log: &SessionLog,
) -> (Tally, Vec<String>, Vec<String>) {
    let events = &truth.events[..upto.map_or(truth.events.len(), |n| n.min(truth.events.len()))];
    let index: HashMap<&str, usize> =
        events.iter().enumerate().map(|(i, e)| (e.id.as_str(), i)).collect();
    let start = events.iter().position(|e| e.kind == "user_message").unwrap_or(events.len());
    let mut fate = vec![Fate::Missing; events.len()];
    let mut tally = Tally::default();
    let mut doubled = Vec::new();
    // Item positions where a declared resync or gap covers what came before the next event.
    let mut declares: Vec<usize> = log.resyncs.clone();
    declares.extend(
        log.items.iter().enumerate().filter(|(_, g)| g.kind == "stream.gap").map(|(i, _)| i),
    );
    declares.sort_unstable();
    tally.resyncs = declares.len() as u64;
    for (at, got) in log.items.iter().enumerate() {
        let Some(&i) = index.get(got.id.as_str()) else { continue };
        match fate[i] {
            Fate::Delivered(life) if life == got.life => {
                tally.duplicated += 1;
                doubled.push(format!("{}:{}", got.id, got.kind));
            }
            Fate::Delivered(_) | Fate::Merged => tally.redelivered += 1,
            Fate::Missing | Fate::Declared => {
                fate[i] = Fate::Delivered(got.life);
                if events[i].merge_key.is_some()
                    && !merge_back(events, &mut fate, i, &got.text, got.life)
                {
                    tally.garbled += 1;
                }
            }
        }
        // A declared resync before this item covers what it did not deliver before it.
        if declares.iter().any(|&d| d <= at) {
            for f in fate.iter_mut().take(i) {
                if *f == Fate::Missing {
                    *f = Fate::Declared;
                }
            }
            declares.retain(|&d| d > at);
        }
    }
    if !declares.is_empty() {
        for f in &mut fate {
            if *f == Fate::Missing {
                *f = Fate::Declared;
            }
        }
    }
    let mut lost = Vec::new();
    for (i, f) in fate.iter().enumerate().skip(start) {
        tally.checked += 1;
        match f {
            Fate::Missing => {
                tally.lost += 1;
                lost.push(format!("{}:{}", events[i].id, events[i].kind));
            }
            Fate::Delivered(_) => tally.delivered += 1,
            Fate::Merged => tally.merged += 1,
            Fate::Declared => tally.declared += 1,
        }
    }
    (tally, lost, doubled)
}

/// Marks the deltas a coalesced delta at `i` with text `text` merged (the undelivered
/// deltas of its message right before it, whose texts end its text in order). False when
/// the text is not made of them.
fn merge_back(
    events: &[super::proxy::Sent],
    fate: &mut [Fate],
    i: usize,
    text: &str,
    life: u32,
) -> bool {
    let Some(mut rest) = text.strip_suffix(events[i].text.as_str()) else { return false };
    let key = &events[i].merge_key;
    let mut j = i;
    while !rest.is_empty() && j > 0 {
        j -= 1;
        // A restarted bridge may merge again deltas its earlier life delivered.
        if events[j].merge_key != *key || fate[j] == Fate::Delivered(life) {
            return false;
        }
        let Some(before) = rest.strip_suffix(events[j].text.as_str()) else { return false };
        rest = before;
        if !matches!(fate[j], Fate::Delivered(_)) {
            fate[j] = Fate::Merged;
        }
    }
    rest.is_empty()
}

/// Permission requests and how often the engine was told an answer.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Approvals {
    /// Permission requests the engine raised.
    pub(crate) raised: u64,
    /// Answered to the engine exactly once.
    pub(crate) answered_once: u64,
    /// Answered to the engine more than once.
    pub(crate) answered_twice: u64,
    /// Never answered (the engine died first, or the run ended).
    pub(crate) unanswered: u64,
    /// Decisions the engine refused as answering no active request (409): an answer given
    /// again after the bridge was killed with the first on its way (the restarted bridge
    /// showed the card again). The engine took nothing from them.
    pub(crate) repeats_refused: u64,
}

/// Counts, for each `permission_request` the engine sent, the decisions it was told before
/// its next one (those it refused as answering nothing active apart).
pub(crate) fn approvals(truth: &SessionTruth) -> Approvals {
    let asks: Vec<usize> = truth
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == "permission_request")
        .map(|(i, _)| i)
        .collect();
    let mut out = Approvals { raised: asks.len() as u64, ..Approvals::default() };
    for (n, &ask) in asks.iter().enumerate() {
        let next = asks.get(n + 1).copied().unwrap_or(usize::MAX);
        let told = truth.decisions.iter().filter(|&&d| d > ask && d <= next).count();
        let refused = truth.refused.iter().filter(|&&d| d > ask && d <= next).count();
        out.repeats_refused += refused as u64;
        match told {
            0 => out.unanswered += 1,
            1 => out.answered_once += 1,
            _ => out.answered_twice += 1,
        }
    }
    out
}
