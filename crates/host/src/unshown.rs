//! The memory of sessions no window shows, bounded. A session's reduced view is what a
//! window binding it later is sent (its declared resync) and what `bb.history` pages through;
//! without a bound, a long-running bridge keeps the view of every session it ever served,
//! those whose engine is gone included.
//!
//! # Rule
//!
//! At most [`crate::HostConfig::max_unshown_views`] views of sessions no window shows are
//! kept. A session is *unshown* when no tab is bound to it and no tab-less connection is open
//! (such a connection shows every session no tab shows). When a new view would take the count
//! past the bound, the least recently active unshown views (by their last event) are
//! dropped, except those of a session still running, with an open prompt, or with events
//! waiting in its lane: what a person may still act on stays. The session itself stays
//! listed; the next tab that binds it gets a notice in its transcript saying the bridge
//! dropped its earlier history to bound its memory and what follows is from the engine (Kilo
//! rebuilds it over REST on select; a BreadBoard stream resumes from its saved position). The
//! count is checked when a view is created, so the views held are at most the shown ones plus
//! the bound plus one.

use std::time::Instant;

use bb_normalize::EventClass;
use bb_protocol::v1::EngineEvent;

use crate::core::Host;
use crate::tabs::ConnId;

/// The notice a session whose view was dropped gets when a tab binds it again.
pub const VIEW_DROPPED_NOTICE: &str = "The bridge dropped its copy of this session's earlier \
     history while no window showed it (it keeps the views of a bounded number of such \
     sessions); what follows is what the engine still sends.";

impl Host {
    /// Drops the least recently active unshown views past the bound.
    pub(crate) fn bound_unshown_views(&mut self) {
        let limit = self.config.max_unshown_views;
        if self.slots.with_view().nth(limit).is_none() {
            return;
        }
        let open: Vec<ConnId> = self.conns.keys().copied().collect();
        if self.tabs.any_tabless(&open) {
            return;
        }
        let mut unshown: Vec<(u64, String)> = self
            .slots
            .with_view()
            .filter(|(id, _)| self.droppable(id))
            .map(|(id, s)| (s.state.as_ref().map_or(0, |s| s.active_at), id.clone()))
            .collect();
        if unshown.len() <= limit {
            return;
        }
        unshown.sort_unstable();
        let excess = unshown.len() - limit;
        for (_, id) in unshown.into_iter().take(excess) {
            self.drop_view(&id);
        }
    }

    /// No tab shows it, and nothing of it waits on a person or a flush.
    fn droppable(&self, id: &str) -> bool {
        !self.tabs.is_bound(id)
            && !self.slots.state(id).is_some_and(|s| s.running)
            && self.prompts.open_count(Some(id)) == 0
            && self.slots.lane(id).is_none_or(|l| l.pending_len() == 0)
    }

    fn drop_view(&mut self, id: &str) {
        if let Some(slot) = self.slots.get_mut(id) {
            slot.view = None;
            slot.lane = None;
            slot.batch = None;
            self.lane_times.forget();
            if let Some(state) = &mut slot.state {
                state.view_dropped = true;
            }
        }
        self.slots.prune(id);
        self.views_dropped += 1;
    }

    /// Views of sessions no window showed dropped so far.
    pub fn views_dropped(&self) -> u64 {
        self.views_dropped
    }

    /// Tells the tab binding `id` that its earlier history was dropped, once.
    pub(crate) fn view_was_dropped(&mut self, id: &str, now: Instant) {
        let dropped = self.slots.state_mut(id).is_some_and(|s| std::mem::take(&mut s.view_dropped));
        if dropped {
            self.bridge_notice(id, "bb-view-dropped", VIEW_DROPPED_NOTICE, now);
        }
    }

    /// A notice of the bridge's own in `id`'s transcript (a `warning` event, `source:
    /// "bridge"`).
    pub(crate) fn bridge_notice(&mut self, id: &str, kind: &str, message: &str, now: Instant) {
        self.closings += 1;
        let mut payload = serde_json::Map::new();
        payload.insert("message".into(), message.into());
        payload.insert("source".into(), "bridge".into());
        let event = EngineEvent {
            id: format!("{kind}-{}", self.closings).into(),
            event_type: "warning".into(),
            turn: None,
            ts: None,
            payload: payload.into(),
        };
        self.engine_events(id, std::iter::once((event, EventClass::RunErrorOrGap)), now);
    }
}
