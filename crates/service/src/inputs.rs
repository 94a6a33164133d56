//! The input channel an engine reports through: a tokio `mpsc` channel of host [`Input`]s,
//! bounded in inputs ([`INPUT_CAPACITY`]) and in the engine events they carry
//! ([`INPUT_EVENT_BUDGET`]).
//!
//! Why two bounds: an engine's pump merges the events of one session that arrived together
//! into one input (up to [`Input::MERGED_EVENTS`]), so 1,024 inputs may hold a quarter of a
//! million events. A reader faster than the service loop (a task that is never made to yield
//! between reads) could queue that much before the loop gets a turn. The event budget holds
//! what is queued to a few thousand events whatever the scheduling: a sender takes one place
//! per event of its input (a semaphore of [`INPUT_EVENT_BUDGET`] places, one operation per
//! input, the places forgotten once the input is queued) and the receiver gives them back
//! when it takes the input out. A full budget holds the engine's reader back, as a full
//! channel does; nothing is dropped. An input of more events than the whole budget takes the
//! whole budget (it passes alone, never waits forever).

use std::sync::Arc;

use bb_host::Input;
use tokio::sync::mpsc::error::{SendError, TryRecvError, TrySendError};
use tokio::sync::{Semaphore, TryAcquireError, mpsc};

/// Capacity of an engine's input channel in inputs; a full channel applies back-pressure to
/// the engine's event reader rather than dropping events.
pub const INPUT_CAPACITY: usize = 1024;

/// Places for engine events in an engine's input channel: what queued inputs may carry
/// together (an input takes one place per event, any other input one place). 4,096 is 16
/// inputs merged to the full [`Input::MERGED_EVENTS`] (256), or 16 rounds of the service
/// loop's input handling at one event an input, so the loop's usual rounds never find a
/// reader waiting; with streamed events of a few hundred bytes, what is queued stays at a
/// few MB where 1,024 merged inputs could hold over a hundred.
pub const INPUT_EVENT_BUDGET: usize = 4096;

/// How many of the budget's places `input` takes: one per engine event it carries (at least
/// one), never more than the whole budget, so any input can pass.
fn places(input: &Input) -> u32 {
    let events = match input {
        Input::Events { events, .. } => events.len(),
        Input::PromptsListed { prompts, .. } => prompts.len(),
        _ => 1,
    };
    // The budget fits in a u32.
    events.clamp(1, INPUT_EVENT_BUDGET) as u32
}

/// Sending half of an engine's input channel: adapters hand the host core its [`Input`]s.
/// Cloned freely; every clone draws on the one event budget.
#[derive(Debug, Clone)]
pub struct InputSender {
    tx: mpsc::Sender<Input>,
    budget: Arc<Semaphore>,
}

/// Receiving half of an engine's input channel, read by the service loop; taking an input
/// out gives its places back to the budget.
#[derive(Debug)]
pub struct InputReceiver {
    rx: mpsc::Receiver<Input>,
    budget: Arc<Semaphore>,
}

/// A fresh input channel: [`INPUT_CAPACITY`] inputs, [`INPUT_EVENT_BUDGET`] event places.
pub fn input_channel() -> (InputSender, InputReceiver) {
    let (tx, rx) = mpsc::channel(INPUT_CAPACITY);
    let budget = Arc::new(Semaphore::new(INPUT_EVENT_BUDGET));
    (InputSender { tx, budget: budget.clone() }, InputReceiver { rx, budget })
}

impl InputSender {
    /// Queues `input`, waiting for its places in the budget and then for room in the
    /// channel. Fails (handing the input back) once the receiver is gone or closed.
    pub async fn send(&self, input: Input) -> Result<(), SendError<Input>> {
        // The common case, room in both, is one `try_send`: no channel future made.
        let input = match self.try_send(input) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Closed(input)) => return Err(SendError(input)),
            Err(TrySendError::Full(input)) => input,
        };
        let n = places(&input);
        let permit = match self.budget.try_acquire_many(n) {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => return Err(SendError(input)),
            Err(TryAcquireError::NoPermits) => match self.budget.acquire_many(n).await {
                Ok(permit) => permit,
                Err(_) => return Err(SendError(input)),
            },
        };
        self.tx.send(input).await?;
        // Queued: the receiver gives the places back when it takes the input out.
        permit.forget();
        Ok(())
    }

    /// Queues `input` if the budget and the channel have room now; else hands it back.
    // The input goes back by move, as tokio's `try_send` gives it: a box would allocate.
    #[allow(clippy::result_large_err)]
    pub fn try_send(&self, input: Input) -> Result<(), TrySendError<Input>> {
        let permit = match self.budget.try_acquire_many(places(&input)) {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => return Err(TrySendError::Closed(input)),
            Err(TryAcquireError::NoPermits) => return Err(TrySendError::Full(input)),
        };
        self.tx.try_send(input)?;
        permit.forget();
        Ok(())
    }
}

impl InputReceiver {
    /// The next input; `None` once every sender is gone and the channel is empty, or it was
    /// closed and is empty.
    pub async fn recv(&mut self) -> Option<Input> {
        let input = self.rx.recv().await?;
        self.budget.add_permits(places(&input) as usize);
        Some(input)
    }

    /// Appends the inputs queued, up to `limit`, to `buf`, waiting for one when none is;
    /// `0` once every sender is gone and the channel is empty, or it was closed and is
    /// empty. Their places go back to the budget in one operation, and the channel's own
    /// in one more: the service loop takes what a wake-up found this way, not one input at
    /// a time (two semaphore operations per input).
    pub async fn recv_many(&mut self, buf: &mut Vec<Input>, limit: usize) -> usize {
        let from = buf.len();
        let n = self.rx.recv_many(buf, limit).await;
        let places: usize = buf[from..].iter().map(|input| places(input) as usize).sum();
        if places > 0 {
            self.budget.add_permits(places);
        }
        n
    }

    /// The next input if one is queued.
    pub fn try_recv(&mut self) -> Result<Input, TryRecvError> {
        let input = self.rx.try_recv()?;
        self.budget.add_permits(places(&input) as usize);
        Ok(input)
    }
}

impl Drop for InputReceiver {
    /// Senders waiting for places fail instead of waiting for a receiver that is gone.
    fn drop(&mut self) {
        self.budget.close();
    }
}
