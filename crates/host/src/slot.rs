//! One map entry per session: what the host knows of it, its event lane and its reduced
//! view, so that an engine input hashes and compares its session id once. Each part comes
//! and goes on its own (a listing forgets a session whose view stays; a view of a session no
//! window shows is dropped while the session stays listed); an entry holding none of them
//! is removed.

use std::sync::Arc;

use bb_normalize::SessionView;

use crate::core::SessionState;
use crate::lane::Lane;

/// A map keyed by session id, hashed with `foldhash`, whose `entry_ref` copies the key only
/// when it inserts one: the event path looks a session up per input and must not allocate
/// for it.
pub(crate) type Keyed<V> = hashbrown::HashMap<String, V, foldhash::fast::RandomState>;

/// One session's entry.
#[derive(Debug)]
pub(crate) struct Slot {
    /// The session's id as every message of it names it (`EventsPayload::session_id`,
    /// shared: a message published, or a due lane listed, costs no copy of it).
    pub(crate) name: Arc<str>,
    /// What the host knows of the session; `None`: not known (the engine's listing left it
    /// out, or only its view or lane is left).
    pub(crate) state: Option<SessionState>,
    /// Its event lane, from its first event until its view is dropped or it is forgotten
    /// with nothing pending.
    pub(crate) lane: Option<Lane>,
    /// Its reduced view model (sent with a declared resync). Boxed: a view is ~2 KiB, and
    /// the map's table keeps room for more entries than it holds.
    pub(crate) view: Option<Box<SessionView>>,
    /// Where its pending batch stands in the order batches began (the host's count of
    /// batches begun when its lane got its first pending event); `None`: nothing pending.
    pub(crate) batch: Option<u64>,
}

impl Slot {
    fn new(id: &str) -> Self {
        Slot { name: Arc::from(id), state: None, lane: None, view: None, batch: None }
    }

    fn is_empty(&self) -> bool {
        self.state.is_none() && self.lane.is_none() && self.view.is_none()
    }
}

/// The sessions' entries.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    map: Keyed<Slot>,
}

impl Slots {
    pub(crate) fn get(&self, id: &str) -> Option<&Slot> {
        self.map.get(id)
    }

    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut Slot> {
        self.map.get_mut(id)
    }

    /// `id`'s entry, made empty when it has none (the key is copied only then).
    pub(crate) fn slot(&mut self, id: &str) -> &mut Slot {
        self.map.entry_ref(id).or_insert_with(|| Slot::new(id))
    }

    /// What the host knows of `id`, if it knows it.
    pub(crate) fn state(&self, id: &str) -> Option<&SessionState> {
        self.map.get(id)?.state.as_ref()
    }

    pub(crate) fn state_mut(&mut self, id: &str) -> Option<&mut SessionState> {
        self.map.get_mut(id)?.state.as_mut()
    }

    pub(crate) fn knows(&self, id: &str) -> bool {
        self.state(id).is_some()
    }

    pub(crate) fn lane(&self, id: &str) -> Option<&Lane> {
        self.map.get(id)?.lane.as_ref()
    }

    pub(crate) fn view(&self, id: &str) -> Option<&SessionView> {
        self.map.get(id)?.view.as_deref()
    }

    pub(crate) fn view_mut(&mut self, id: &str) -> Option<&mut SessionView> {
        self.map.get_mut(id)?.view.as_deref_mut()
    }

    /// The known sessions and their state.
    pub(crate) fn states(&self) -> impl Iterator<Item = (&str, &SessionState)> {
        self.map.iter().filter_map(|(id, s)| Some((id.as_str(), s.state.as_ref()?)))
    }

    pub(crate) fn lanes(&self) -> impl Iterator<Item = &Lane> {
        self.map.values().filter_map(|s| s.lane.as_ref())
    }

    /// Into `out`, the sessions with a pending batch that `pick` keeps, in the order their
    /// batches began.
    pub(crate) fn pending_in_order(
        &self,
        out: &mut Vec<(u64, Arc<str>)>,
        pick: impl Fn(&str, &Slot) -> bool,
    ) {
        out.clear();
        for (id, slot) in &self.map {
            if let Some(at) = slot.batch
                && pick(id, slot)
            {
                out.push((at, Arc::clone(&slot.name)));
            }
        }
        out.sort_unstable_by_key(|(at, _)| *at);
    }

    /// The sessions with a view, and their entries.
    pub(crate) fn with_view(&self) -> impl Iterator<Item = (&String, &Slot)> {
        self.map.iter().filter(|(_, s)| s.view.is_some())
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &Slot)> {
        self.map.iter()
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut Slot)> {
        self.map.iter_mut()
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<Slot> {
        self.map.remove(id)
    }

    /// Removes `id`'s entry when it holds nothing any more.
    pub(crate) fn prune(&mut self, id: &str) {
        if self.map.get(id).is_some_and(Slot::is_empty) {
            self.map.remove(id);
        }
    }

    /// Removes every entry that holds nothing any more.
    pub(crate) fn prune_all(&mut self) {
        self.map.retain(|_, s| !s.is_empty());
    }
}
