//! The resume positions of the BreadBoard sessions: what the stream tasks have handed to the
//! service, what the runtime confirmed as written to a webview, and a writer thread that
//! persists every change at once (atomically, off the async workers).
//!
//! A position moves only past events the bridge wrote to a webview
//! ([`crate::EngineAdapter::delivered`]). A runtime that never confirms deliveries (no call
//! to `delivered` yet) gets the older rule: an event counts once it is handed to the service.
//! The first confirmation switches to the strict rule for good. Either way a position never
//! moves past the last event the stream task handed over, and never backwards.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::client::{CursorStore, write_atomic};
use bb_host::Clock;

use crate::lock;

/// The positions and their writer.
#[derive(Debug)]
pub(crate) struct Cursors {
    store: Arc<Mutex<CursorStore>>,
    /// Last `seq` handed to the service per session (an upper bound for a confirmation).
    handed: Mutex<HashMap<String, u64>>,
    confirmed: AtomicBool,
    wake: Mutex<Option<mpsc::Sender<()>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    clock: Arc<dyn Clock>,
}

impl Cursors {
    /// Opens `<state_dir>/breadboard-cursors.json` (a corrupt file is replaced: the streams
    /// then replay the engine's ring) and starts the writer thread.
    pub(crate) fn open(state_dir: &Path, clock: Arc<dyn Clock>) -> Self {
        let store = CursorStore::open(state_dir, Duration::ZERO).unwrap_or_else(|error| {
            tracing::warn!(%error, "starting with no saved stream positions");
            CursorStore::empty(state_dir, Duration::ZERO)
        });
        let store = Arc::new(Mutex::new(store));
        let (wake, woken) = mpsc::channel::<()>();
        let shared = Arc::clone(&store);
        let writer = std::thread::Builder::new()
            .name("bb-cursors".into())
            .spawn(move || write_loop(&shared, &woken))
            .map_err(|error| tracing::warn!(%error, "no cursor writer thread: positions are saved at exit"))
            .ok();
        Self {
            store,
            handed: Mutex::new(HashMap::new()),
            confirmed: AtomicBool::new(false),
            wake: Mutex::new(Some(wake)),
            writer: Mutex::new(writer),
            clock,
        }
    }

    /// The saved position of a session.
    pub(crate) fn get(&self, session: &str) -> Option<u64> {
        lock(&self.store).get(session)
    }

    /// Where a new stream of `session` in this process starts: after what was handed to the
    /// service (it is on its way to the webviews), else after the saved position.
    pub(crate) fn resume_from(&self, session: &str) -> Option<u64> {
        let handed = lock(&self.handed).get(session).copied();
        handed.max(self.get(session))
    }

    /// Sessions with a saved position.
    pub(crate) fn sessions(&self) -> Vec<String> {
        lock(&self.store).sessions().map(|(id, _)| id.to_owned()).collect()
    }

    /// A stream task handed the event `seq` of `session` to the service.
    pub(crate) fn handed(&self, session: &str, seq: u64) {
        let mut handed = lock(&self.handed);
        let entry = handed.entry(session.to_owned()).or_insert(0);
        *entry = (*entry).max(seq);
        drop(handed);
        if !self.confirmed.load(Ordering::Acquire) {
            self.record(session, seq);
        }
    }

    /// The runtime wrote the events of `session` up to `event_id` (the SSE id, a `seq`) to a
    /// webview. Ids that are not a `seq` (bridge events, the connect snapshot) move nothing.
    pub(crate) fn delivered(&self, session: &str, event_id: &str) {
        self.confirmed.store(true, Ordering::Release);
        let Ok(seq) = event_id.parse::<u64>() else {
            return;
        };
        let bound = lock(&self.handed).get(session).copied();
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
        if let Some(wake) = lock(&self.wake).as_ref() {
            // The writer is gone only after `close`; the final flush then saves the table.
            let _ = wake.send(());
        }
    }

    /// Stops the writer and writes what is left (bridge exit).
    pub(crate) fn close(&self) {
        lock(&self.wake).take();
        if let Some(writer) = lock(&self.writer).take()
            && writer.join().is_err()
        {
            tracing::warn!("the cursor writer thread panicked");
        }
        if let Err(error) = lock(&self.store).flush() {
            tracing::warn!(%error, "saving stream positions failed");
        }
    }
}

/// Writes every change as soon as it comes (coalescing a burst into one write), outside the
/// table's lock, until the waking side is dropped.
fn write_loop(store: &Mutex<CursorStore>, woken: &mpsc::Receiver<()>) {
    while woken.recv().is_ok() {
        while woken.try_recv().is_ok() {}
        let (bytes, path) = {
            let mut store = lock(store);
            (store.take_snapshot(), store.path().to_path_buf())
        };
        if let Some(bytes) = bytes
            && let Err(error) = write_atomic(&path, &bytes)
        {
            tracing::warn!(%error, "saving stream positions failed");
        }
    }
}
