//! What of the prompt table outlives the bridge: the open prompts, each with the event that
//! showed it and, for one being answered, the answer on its way, taken when they changed
//! ([`Host::take_saved`]) for the runtime to keep in its state directory, and given back after
//! a restart ([`crate::Input::PromptsRestored`]): shown again with their original request ids,
//! until the engine says it no longer knows them ([`crate::Input::PromptsForgotten`]: closed
//! as stale, every view told so) or they are answered. An answer saved on its way is not
//! asked again: its card closes at once with that answer and who gave it, and the runtime
//! delivers it ([`crate::Input::PromptResent`]). Pure: the runtime does the reading and
//! writing.

use std::time::Instant;

use bb_normalize::EventClass;
use bb_protocol::v1::{AnsweredBy, EngineEvent};
use serde_json::Value;

use crate::core::Host;
use crate::prompts::{AnswerOutcome, Prompt, PromptState};

/// An open prompt as kept across a restart.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedPrompt {
    /// The request as raised (its own session, its original id).
    pub prompt: Prompt,
    /// The event that showed it, when the host had one.
    pub event: Option<(EngineEvent, EventClass)>,
    /// The answer on its way to the engine when it was saved, if any.
    pub answer: Option<SavedAnswer>,
}

/// An answer the host allowed, saved before it was sent to the engine (write-ahead): after a
/// restart the bridge delivers it itself rather than ask the user again.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedAnswer {
    /// The decision's wire word (`allow_once`, `allow_rule`, `deny`, `reply`).
    pub decision: String,
    /// The webview that gave it (its connection number in the run that saved it).
    pub by: AnsweredBy,
    /// The call that carries it to the engine, as the runtime kept it
    /// ([`Host::keep_answer_call`]): what it sends again.
    pub call: Option<Value>,
}

impl Host {
    /// The open prompts, when they changed since the last take (`None`: nothing to save).
    /// An answer on its way is saved with the prompt ([`SavedAnswer`]): take and write this
    /// before the answer goes to the engine, so a bridge killed in between delivers it after
    /// its restart instead of asking again.
    pub fn take_saved(&mut self) -> Option<Vec<SavedPrompt>> {
        let changes = self.prompts.changes();
        if self.saved_at == Some(changes) {
            return None;
        }
        self.saved_at = Some(changes);
        let open: Vec<Prompt> = self.prompts.open().collect();
        let key = |p: &Prompt| (p.session_id.clone(), p.request_id.clone());
        self.shown_events.retain(|k, _| open.iter().any(|p| key(p) == *k));
        self.answer_calls.retain(|k, _| open.iter().any(|p| key(p) == *k));
        Some(
            open.into_iter()
                .map(|prompt| {
                    let k = key(&prompt);
                    let event = self.shown_events.get(&k).cloned();
                    let answer =
                        self.prompts.answering(&k.0, &k.1).map(|(decision, by)| SavedAnswer {
                            decision: decision.clone(),
                            by: by.clone(),
                            call: self.answer_calls.get(&k).cloned(),
                        });
                    SavedPrompt { prompt, event, answer }
                })
                .collect(),
        )
    }

    /// Keeps the call that carries the answer `prompt` is being given (saved with it, sent
    /// again by a restarted bridge).
    pub fn keep_answer_call(&mut self, prompt: &Prompt, call: Value) {
        let key = (prompt.session_id.clone(), prompt.request_id.clone());
        self.answer_calls.insert(key, call);
        // Saved with the answer: the table counts as changed.
        self.saved_at = None;
    }

    /// Keeps the event that showed a prompt (what a restart shows again).
    pub(crate) fn keep_shown(&mut self, prompt: &Prompt, event: &(EngineEvent, EventClass)) {
        let key = (prompt.session_id.clone(), prompt.request_id.clone());
        self.shown_events.insert(key, event.clone());
    }

    pub(crate) fn prompts_restored(&mut self, saved: Vec<SavedPrompt>, now: Instant) {
        for SavedPrompt { prompt, event, answer } in saved {
            let key = (prompt.session_id.clone(), prompt.request_id.clone());
            self.prompt_raised(prompt, event, now);
            self.prompts.restored(&key.0, &key.1);
            let Some(SavedAnswer { decision, by, call }) = answer else { continue };
            if let Some(call) = call {
                self.answer_calls.insert(key.clone(), call);
            }
            // The user answered before the restart: the card closes with that answer (not
            // asked again) while the bridge delivers it.
            if let Some(change) = self.prompts.resume_answer(&key.0, &key.1, (decision, by))
                && let Some((decision, by)) = self.prompts.announce(&key.0, &key.1)
            {
                self.close_card(&change, decision, Some(by), now);
            }
        }
        // What was just read back is what is saved.
        self.saved_at = Some(self.prompts.changes());
    }

    pub(crate) fn prompts_forgotten(&mut self, forgotten: Vec<(String, String)>, now: Instant) {
        for (session, request) in forgotten {
            if let Some(change) = self.prompts.forget(&session, &request) {
                // One being answered has its card closed with the answer already.
                if change.state == PromptState::Stale {
                    self.closed_silently(&change, now);
                }
                self.touch(&session);
            }
        }
    }

    /// How the engine took an answer a restarted bridge sent again: accepted, or refused as
    /// not pending (it took the first sending before the restart), settles it; any other
    /// failure asks the user again (the card is shown anew).
    pub(crate) fn prompt_resent(
        &mut self,
        session_id: &str,
        request_id: &str,
        outcome: AnswerOutcome,
        now: Instant,
    ) {
        if outcome == AnswerOutcome::Failed {
            if let Some(change) = self.prompts.undeliverable(session_id, request_id) {
                let key = (session_id.to_owned(), request_id.to_owned());
                if let Some(event) = self.shown_events.get(&key).cloned() {
                    self.show_raised(&change.prompt, event, now);
                }
            }
        } else {
            self.prompts.answered(session_id, request_id, AnswerOutcome::Accepted);
        }
        self.touch(session_id);
    }
}
