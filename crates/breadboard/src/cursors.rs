//! The resume positions of the BreadBoard sessions: what the stream tasks have handed to the
//! service, what the runtime confirmed as written to a webview, and a writer thread that
//! persists them (atomically, off the async workers): a change after a quiet spell at once,
//! then at most once per [`SAVE_INTERVAL`] while they keep moving, and on exit. The thread
//! starts with the first change: a bridge whose sessions never stream (an idle sidecar)
//! has none, and keeps no stack for it.
//!
//! What a crash (a kill, a power loss) can lose: the moves of the last [`SAVE_INTERVAL`] at
//! most (an orderly exit loses none). The next start then resumes from the older position and
//! the engine sends again the events after it, about a second's worth for each session that
//! was streaming, with the ids they had (a page that kept its view drops the ids it has
//! shown); that is the same at-least-once rule as for the events between a webview write and
//! its save, only with a longer window. Saving every move cost a create, write,
//! `fsync` and rename of the whole file about every 18 events at 100 sessions streaming.
//!
//! A position moves only past events the bridge wrote to every webview showing the session
//! ([`crate::EngineAdapter::delivered`]). The service says it reports deliveries when it is
//! built (`reports_deliveries`), so that rule holds from the start; a caller that never
//! confirms deliveries (no service, no call to `delivered` yet) gets the older rule: an event
//! counts once it is handed over. The first confirmation switches to the strict rule for good. Either way a position never
//! moves past the last event the stream task handed over, and never backwards.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::client::{BySession, CursorStore, write_atomic};
use bb_host::Clock;

use crate::lock;

/// The least time between two saves of the positions file while positions keep moving.
pub(crate) const SAVE_INTERVAL: Duration = Duration::from_secs(1);

/// A stream task's handle on its session's last handed `seq` in [`Cursors`], taken at its
/// first event: later events move it without the table's lock and look-up.
pub(crate) type Handed = Option<Arc<AtomicU64>>;

/// The positions and their writer.
#[derive(Debug)]
pub(crate) struct Cursors {
    store: Arc<Mutex<CursorStore>>,
    /// Last `seq` handed to the service per session (an upper bound for a confirmation),
    /// each shared with the session's stream task ([`Handed`]).
    handed: Mutex<BySession<Arc<AtomicU64>>>,
    confirmed: AtomicBool,
    /// A save is asked for and not yet taken by the writer: further changes join it without
    /// waking the writer again.
    pending: Arc<AtomicBool>,
    wake: Mutex<Option<mpsc::Sender<()>>>,
    writer: Mutex<Writer>,
    clock: Arc<dyn Clock>,
}

/// The writer thread: not started yet (with what it will take), running, or gone.
#[derive(Debug)]
enum Writer {
    Idle(mpsc::Receiver<()>),
    Running(JoinHandle<()>),
    Gone,
}

impl Cursors {
    /// Opens `<state_dir>/breadboard-cursors.json` (a corrupt file is replaced: the streams
    /// then replay the engine's ring); the writer thread starts with the first change.
    pub(crate) fn open(state_dir: &Path, clock: Arc<dyn Clock>) -> Self {
        let store = CursorStore::open(state_dir, Duration::ZERO).unwrap_or_else(|error| {
            tracing::warn!(%error, "starting with no saved stream positions");
            CursorStore::empty(state_dir, Duration::ZERO)
        });
        let (wake, woken) = mpsc::channel::<()>();
        Self {
            store: Arc::new(Mutex::new(store)),
            handed: Mutex::new(BySession::default()),
            confirmed: AtomicBool::new(false),
            pending: Arc::new(AtomicBool::new(false)),
            wake: Mutex::new(Some(wake)),
            writer: Mutex::new(Writer::Idle(woken)),
            clock,
        }
    }

    /// Whether the writer thread was started (tests).
    #[cfg(test)]
    pub(crate) fn writer_started(&self) -> bool {
        !matches!(*lock(&self.writer), Writer::Idle(_))
    }

    /// Starts the writer thread unless it runs or ran.
    fn start_writer(&self) {
        let mut writer = lock(&self.writer);
        if !matches!(*writer, Writer::Idle(_)) {
            return;
        }
        let Writer::Idle(woken) = std::mem::replace(&mut *writer, Writer::Gone) else {
            return;
        };
        let (store, asked) = (Arc::clone(&self.store), Arc::clone(&self.pending));
        let clock = Arc::clone(&self.clock);
        match std::thread::Builder::new()
            .name("bb-cursors".into())
            .spawn(move || write_loop(&store, &asked, &woken, clock.as_ref(), SAVE_INTERVAL))
        {
            Ok(handle) => *writer = Writer::Running(handle),
            Err(error) => {
                tracing::warn!(%error, "no cursor writer thread: positions are saved at exit");
            }
        }
    }

    /// The saved position of a session.
    pub(crate) fn get(&self, session: &str) -> Option<u64> {
        lock(&self.store).get(session)
    }

    /// Where a new stream of `session` in this process starts: after what was handed to the
    /// service (it is on its way to the webviews), else after the saved position.
    pub(crate) fn resume_from(&self, session: &str) -> Option<u64> {
        let handed = lock(&self.handed).get(session).map(|h| h.load(Ordering::Acquire));
        handed.max(self.get(session))
    }

    /// Sessions with a saved position.
    pub(crate) fn sessions(&self) -> Vec<String> {
        lock(&self.store).sessions().map(|(id, _)| id.to_owned()).collect()
    }

    /// A stream task handed the event `seq` of `session` to the service; `slot` is the task's
    /// handle on the session's entry (taken here at its first event). A session forgotten
    /// meanwhile (its task aborted, or ending) is not entered again by a handle kept.
    pub(crate) fn handed(&self, slot: &mut Handed, session: &str, seq: u64) {
        match slot {
            Some(handed) => {
                handed.fetch_max(seq, Ordering::AcqRel);
            }
            None => {
                let mut handed = lock(&self.handed);
                // The session's name is copied only the first time.
                let entry = match handed.get(session) {
                    Some(entry) => {
                        entry.fetch_max(seq, Ordering::AcqRel);
                        Arc::clone(entry)
                    }
                    None => {
                        let entry = Arc::new(AtomicU64::new(seq));
                        handed.insert(session.to_owned(), Arc::clone(&entry));
                        entry
                    }
                };
                *slot = Some(entry);
            }
        }
        if !self.confirmed.load(Ordering::Acquire) {
            self.record(session, seq);
        }
    }

    /// Moves positions only on confirmations from now on (the runtime reports them).
    pub(crate) fn strict(&self) {
        self.confirmed.store(true, Ordering::Release);
    }

    /// The runtime wrote the events of `session` up to `event_id` (the SSE id, a `seq`) to a
    /// webview. Ids that are not a `seq` (bridge events, the connect snapshot) move nothing.
    pub(crate) fn delivered(&self, session: &str, event_id: &str) {
        self.confirmed.store(true, Ordering::Release);
        let Ok(seq) = event_id.parse::<u64>() else {
            return;
        };
        let bound = lock(&self.handed).get(session).map(|h| h.load(Ordering::Acquire));
        if let Some(bound) = bound {
            self.record(session, seq.min(bound));
        }
    }

    fn record(&self, session: &str, seq: u64) {
        lock(&self.store).record(session, seq, self.clock.now());
        self.wake();
    }

    /// Forgets a session (deleted, or no longer held by the engine).
    pub(crate) fn forget(&self, session: &str) {
        lock(&self.handed).remove(session);
        lock(&self.store).forget(session, self.clock.now());
        self.wake();
    }

    fn wake(&self) {
        if self.pending.swap(true, Ordering::AcqRel) {
            return;
        }
        self.start_writer();
        if let Some(wake) = lock(&self.wake).as_ref() {
            // The writer is gone only after `close` (or could not start); the final flush
            // then saves the table.
            let _ = wake.send(());
        }
    }

    /// Stops the writer and writes what is left (bridge exit).
    pub(crate) fn close(&self) {
        lock(&self.wake).take();
        let writer = std::mem::replace(&mut *lock(&self.writer), Writer::Gone);
        if let Writer::Running(handle) = writer
            && handle.join().is_err()
        {
            tracing::warn!("the cursor writer thread panicked");
        }
        if let Err(error) = lock(&self.store).flush() {
            tracing::warn!(%error, "saving stream positions failed");
        }
    }
}

/// Saves the table when asked, at most once per `interval` (a burst of changes is one
/// save, written outside the table's lock), until the waking side is dropped; `close` then
/// writes what is left.
fn write_loop(
    store: &Mutex<CursorStore>,
    pending: &AtomicBool,
    woken: &mpsc::Receiver<()>,
    clock: &dyn Clock,
    interval: Duration,
) {
    let mut last_save: Option<Instant> = None;
    while woken.recv().is_ok() {
        if let Some(at) = last_save {
            // Nobody wakes the writer while a save is pending: this sleeps out the interval,
            // or ends at once when the bridge closes.
            let left = interval.saturating_sub(clock.now().saturating_duration_since(at));
            if !left.is_zero()
                && woken.recv_timeout(left) == Err(mpsc::RecvTimeoutError::Disconnected)
            {
                return;
            }
        }
        // Cleared before the snapshot: a change after it asks for the next save.
        pending.store(false, Ordering::Release);
        let (bytes, path) = {
            let mut store = lock(store);
            (store.take_snapshot(), store.path().to_path_buf())
        };
        if let Some(bytes) = bytes {
            if let Err(error) = write_atomic(&path, &bytes) {
                tracing::warn!(%error, "saving stream positions failed");
            }
            last_save = Some(clock.now());
        }
    }
}
