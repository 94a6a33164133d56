//! A thread of its own for an engine's event path.
//!
//! The Kilo router (stream reading, SSE parsing, routing) and its pump (the event mapping)
//! hand every event on to the service loop. On a work-stealing runtime they, the service
//! loop and the stdio writer move between the cores, and each event is made on one core
//! and read on another several times over; measured on the Kilo capture
//! (`BENCHMARKS.md`), each stage then took ~45 % longer than on one core. On this thread's
//! single-threaded runtime the router and pump stay together, and only their output crosses
//! to the service loop.

use std::io;

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

use crate::pace::Pace;

/// The thread and its runtime; dropping it stops the runtime and every task on it.
#[derive(Debug)]
pub struct EventsThread {
    handle: Handle,
    _stop: oneshot::Sender<()>,
}

impl EventsThread {
    /// Starts the thread (`bb-engine-events`) with a single-threaded runtime, timers and IO
    /// enabled.
    pub fn start() -> io::Result<Self> {
        Self::start_paced(None)
    }

    /// [`EventsThread::start`], the thread paced by `pace` when given (it gathers while
    /// busy, [`crate::pace`]).
    pub fn start_paced(pace: Option<&Pace>) -> io::Result<Self> {
        let mut builder = Builder::new_current_thread();
        if let Some(pace) = pace {
            builder.on_thread_park(pace.park_hook());
        }
        let runtime = builder.enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new().name("bb-engine-events".into()).spawn(move || {
            runtime.block_on(async {
                let _ = stopped.await;
            });
        })?;
        Ok(Self { handle, _stop: stop })
    }

    /// Where to spawn the event path's tasks.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}
