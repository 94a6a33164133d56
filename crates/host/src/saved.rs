//! What of the prompt table outlives the bridge: the open prompts, each with the event that
//! showed it, taken when they changed ([`Host::take_saved`]) for the runtime to keep in its
//! state directory, and given back after a restart ([`crate::Input::PromptsRestored`]):
//! shown again with their original request ids, until the engine says it no longer knows
//! them ([`crate::Input::PromptsForgotten`]: closed as stale, every view told so) or they are
//! answered. Pure: the runtime does the reading and writing.

use std::time::Instant;

use bb_normalize::EventClass;
use bb_protocol::v1::EngineEvent;

use crate::core::Host;
use crate::prompts::Prompt;

/// An open prompt as kept across a restart.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedPrompt {
    /// The request as raised (its own session, its original id).
    pub prompt: Prompt,
    /// The event that showed it, when the host had one.
    pub event: Option<(EngineEvent, EventClass)>,
}

impl Host {
    /// The open prompts, when they changed since the last take (`None`: nothing to save).
    /// An answer on its way is saved as pending: after a restart it may be given again (the
    /// engine refuses one it already took, which makes the prompt stale).
    pub fn take_saved(&mut self) -> Option<Vec<SavedPrompt>> {
        let changes = self.prompts.changes();
        if self.saved_at == Some(changes) {
            return None;
        }
        self.saved_at = Some(changes);
        let open: Vec<Prompt> = self.prompts.open().collect();
        let key = |p: &Prompt| (p.session_id.clone(), p.request_id.clone());
        self.shown_events.retain(|k, _| open.iter().any(|p| key(p) == *k));
        Some(
            open.into_iter()
                .map(|prompt| {
                    let event = self.shown_events.get(&key(&prompt)).cloned();
                    SavedPrompt { prompt, event }
                })
                .collect(),
        )
    }

    /// Keeps the event that showed a prompt (what a restart shows again).
    pub(crate) fn keep_shown(&mut self, prompt: &Prompt, event: &(EngineEvent, EventClass)) {
        let key = (prompt.session_id.clone(), prompt.request_id.clone());
        self.shown_events.insert(key, event.clone());
    }

    pub(crate) fn prompts_restored(&mut self, saved: Vec<SavedPrompt>, now: Instant) {
        for SavedPrompt { prompt, event } in saved {
            self.prompt_raised(prompt, event, now);
        }
        // What was just read back is what is saved.
        self.saved_at = Some(self.prompts.changes());
    }

    pub(crate) fn prompts_forgotten(&mut self, forgotten: Vec<(String, String)>, now: Instant) {
        for (session, request) in forgotten {
            if let Some(change) = self.prompts.forget(&session, &request) {
                self.closed_silently(&change, now);
                self.touch(&session);
            }
        }
    }
}
