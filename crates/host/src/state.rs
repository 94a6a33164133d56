//! The `bb/state` projection, refreshed in place: a connection's last state is brought up
//! to date field by field, so a poll that finds nothing changed allocates nothing, and one
//! that does reuses the last state's strings.

use bb_protocol::v1::{SessionSummary, StatePayload};

use crate::core::{Host, SessionState};
use crate::tabs::ConnId;

impl Host {
    /// The current `bb/state` projection for `conn`.
    pub fn state(&self, conn: ConnId) -> StatePayload {
        let mut state = StatePayload {
            sessions: Vec::new(),
            active_session_id: None,
            running: None,
            pending_permission_count: None,
        };
        self.refresh_state(conn, &mut state);
        state
    }

    /// Brings `state` up to the current projection for `conn`; `true` when it changed.
    pub(crate) fn refresh_state(&self, conn: ConnId, state: &mut StatePayload) -> bool {
        let StatePayload { sessions, active_session_id, running, pending_permission_count } = state;
        let active = self.conns.get(&conn).and_then(|c| c.active.as_deref());
        let mut changed = false;
        let mut n = 0;
        for id in &self.order {
            let Some(s) = self.slots.state(id) else { continue };
            if n == sessions.len() {
                sessions.push(SessionSummary::default());
                changed = true;
            }
            changed |= self.refresh_summary(id, s, &mut sessions[n]);
            n += 1;
        }
        if sessions.len() != n {
            sessions.truncate(n);
            changed = true;
        }
        changed |= set_opt(active_session_id, active);
        let active_running = active.and_then(|id| self.slots.state(id)).is_some_and(|s| s.running);
        changed |= set(running, Some(active_running));
        changed |= set(pending_permission_count, Some(self.prompts.open_count(None)));
        changed
    }

    /// Brings `slot` up to session `id`'s entry in `bb/state`; `true` when it changed.
    fn refresh_summary(&self, id: &str, s: &SessionState, slot: &mut SessionSummary) -> bool {
        let untold;
        let base = match s.summary.as_ref() {
            Some(summary) => summary,
            None => {
                untold = SessionSummary::default();
                &untold
            }
        };
        let SessionSummary {
            session_id,
            title,
            status,
            updated_at,
            queued_prompts: _,
            parent_id: _,
            pending_permission_count: _,
            folder,
        } = base;
        let session_id = if s.summary.as_ref().is_some() { session_id.as_str() } else { id };
        // The engine's own status stands (failed, completed, …); `running` comes from the
        // run flag derived from events; `idle` when the engine said nothing, or said
        // `running`/`busy` of a session with no turn in progress (BreadBoard's `running`
        // means the session is alive).
        let status = if s.running {
            "running"
        } else {
            match status.as_deref() {
                None | Some("running" | "busy") => "idle",
                Some(st) => st,
            }
        };
        let waiting = self.prompts.open_count(Some(id));
        let mut changed = false;
        changed |= set_str(&mut slot.session_id, session_id);
        // A session the engine gave no title is named by its first prompt.
        if title.as_deref().is_none_or(|t| t.trim().is_empty()) {
            let named = self.slots.view(id).and_then(bb_normalize::SessionView::title);
            changed |= set_opt(&mut slot.title, named.as_deref());
        } else {
            changed |= set_opt(&mut slot.title, title.as_deref());
        }
        changed |= set_opt(&mut slot.status, Some(status));
        changed |= set(&mut slot.updated_at, *updated_at);
        changed |=
            set(&mut slot.queued_prompts, (s.queued_prompts > 0).then_some(s.queued_prompts));
        changed |= set_opt(&mut slot.parent_id, s.parent.as_deref());
        changed |= set(&mut slot.pending_permission_count, (waiting > 0).then_some(waiting));
        changed |= set_opt(&mut slot.folder, folder.as_deref());
        changed
    }
}

/// Sets `slot` to `value`; `true` when it differed.
fn set<T: PartialEq>(slot: &mut T, value: T) -> bool {
    let differs = *slot != value;
    if differs {
        *slot = value;
    }
    differs
}

/// Sets `slot` to `value`, reusing its buffer; `true` when it differed.
fn set_str(slot: &mut String, value: &str) -> bool {
    let differs = slot != value;
    if differs {
        slot.clear();
        slot.push_str(value);
    }
    differs
}

/// Sets `slot` to `value`, reusing its buffer; `true` when it differed.
fn set_opt(slot: &mut Option<String>, value: Option<&str>) -> bool {
    match (slot.as_mut(), value) {
        (Some(s), Some(v)) => set_str(s, v),
        (None, None) => false,
        (_, None) => {
            *slot = None;
            true
        }
        (None, Some(v)) => {
            *slot = Some(v.to_owned());
            true
        }
    }
}
