//! The host's side of prompts: what the engine raises, lists and settles goes through the
//! one prompt table ([`crate::prompts`]); the webview's answers are allowed (or refused, the
//! trust gate included) by [`Host::begin_answer`]; prompts to withdraw from the engine
//! (expired, cancelled) come out of [`Host::poll_withdraw`]. A sub-agent's prompt that no
//! tab of its own session shows is also shown, as an event of that session, on the tab of
//! its nearest ancestor that one shows.

use std::iter;
use std::time::Instant;

use bb_normalize::EventClass;
use bb_protocol::v1::{AnsweredBy, EngineEvent, PromptClosedPayload};
use serde_json::{Map, Value};

use crate::core::Host;
use crate::prompts::{AnswerError, AnswerOutcome, Change, Prompt, PromptState, Raised, Verdict};

/// Sub-agents nested deeper than this are not searched for a showing ancestor.
const MAX_DEPTH: usize = 32;

/// The type of the event the host makes when a shown prompt closes without the engine
/// saying so (it went stale, or died with a restarted engine): `payload: {sessionID,
/// requestId, decision}` with `decision` `stale`, `settled` or `cancelled`, class
/// `permission.response`, so every view resolves its card.
pub const PROMPT_CLOSED_EVENT: &str = "bb.prompt.closed";

/// A pending prompt the engine must be told to deny.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withdraw {
    /// The prompt (its own session).
    pub prompt: Prompt,
    /// Why: [`PromptState::Expired`] or [`PromptState::Cancelled`].
    pub why: PromptState,
}

/// The prompt counters of the telemetry plan (`kilo.cli.permissions.prompt_count`,
/// `kilo.cli.tools.write.allow_count` / `deny_count`), for every engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptCounters {
    /// Prompts raised as new (shown).
    pub shown: u64,
    /// Answers approving a write, a command or an unknown kind, taken by the engine.
    pub write_allow: u64,
    /// Answers denying one, taken by the engine.
    pub write_deny: u64,
}

impl Host {
    /// The webview answers `request_id` in `session_id` (the prompt's own session, or an
    /// ancestor's whose tab showed it): the one right to tell the engine, with the prompt as
    /// raised (its own session), or why not. Allowing needs trust for writes, commands and
    /// unknown kinds; a question is replied to or denied, never allowed. Report how the
    /// engine took it with [`crate::Input::PromptAnswered`].
    pub fn begin_answer(
        &mut self,
        session_id: &str,
        request_id: &str,
        verdict: Verdict,
    ) -> Result<Prompt, AnswerError> {
        let owner = self.prompt_owner(session_id, request_id);
        let trusted = self.trusted();
        let entry = self.prompts.begin(&owner, request_id, verdict, trusted)?;
        Ok(Prompt {
            session_id: owner,
            request_id: request_id.to_owned(),
            kind: entry.kind,
            paths: entry.paths.clone(),
        })
    }

    /// [`Host::begin_answer`] for an answer `conn` gave with `decision` (the wire word:
    /// `allow_once`, `deny`, …): once the engine took it, every window showing the prompt
    /// gets a [`PROMPT_CLOSED_EVENT`] naming the decision and who answered (the connection
    /// and its tab that shows the session), and a later answer's refusal says the same.
    pub fn begin_answer_from(
        &mut self,
        conn: crate::ConnId,
        session_id: &str,
        request_id: &str,
        verdict: Verdict,
        decision: &str,
    ) -> Result<Prompt, AnswerError> {
        let prompt = self.begin_answer(session_id, request_id, verdict)?;
        let tab_id = self
            .tab_showing(conn, session_id)
            .or_else(|| self.tab_showing(conn, &prompt.session_id));
        let by = AnsweredBy { connection: conn, tab_id };
        self.prompts.record_answer(
            &prompt.session_id,
            &prompt.request_id,
            (decision.to_owned(), by),
        );
        Ok(prompt)
    }

    /// Whether an answer to `request_id` in `session_id` that names the card it answers (the
    /// id of the event that showed it, `bb.approvePermission`'s `eventId`) answers the open
    /// request of that id: an engine may give a later request the id of an earlier one
    /// (BreadBoard numbers them per run), and an answer given to the earlier card that
    /// arrives once the later one is open must not be taken for it. `Err`
    /// (`permission_not_pending`) when the open request was shown by another event; `Ok`
    /// when no card is named, or the request is not open (then [`Host::begin_answer`] says
    /// why) or was shown without an event.
    pub fn answers_card(
        &self,
        session_id: &str,
        request_id: &str,
        event_id: Option<&str>,
    ) -> Result<(), AnswerError> {
        let Some(event_id) = event_id else { return Ok(()) };
        let owner = self.prompt_owner(session_id, request_id);
        let open = self.prompts.get(&owner, request_id).is_some_and(|e| e.state.is_open());
        let key = (owner, request_id.to_owned());
        match self.shown_events.get(&key) {
            Some((shown, _)) if open && shown.id != event_id => Err(AnswerError::NotPending {
                request: key.1,
                why: "the card answered shows an earlier request of this id, closed since; a \
                      newer request reuses the id",
                answered: None,
            }),
            _ => Ok(()),
        }
    }

    /// The next pending prompt to withdraw from the engine (deny), if any.
    pub fn poll_withdraw(&mut self) -> Option<Withdraw> {
        self.withdraws.pop_front()
    }

    /// The prompt counters so far.
    pub fn prompt_counters(&self) -> PromptCounters {
        self.prompt_counters
    }

    /// The session whose prompt `request_id` is: `session_id` when it has one of that id,
    /// else a descendant's (shown on `session_id`'s tab, or under it), open ones first.
    fn prompt_owner(&self, session_id: &str, request_id: &str) -> String {
        if self.prompts.get(session_id, request_id).is_some() {
            return session_id.to_owned();
        }
        let mut found: Option<(&str, bool)> = None;
        for (owner, entry) in self.prompts.by_request(request_id) {
            let under = entry.shown_on.as_deref() == Some(session_id)
                || self.ancestors(owner).any(|a| a == session_id);
            if under && found.is_none_or(|(_, open)| !open && entry.state.is_open()) {
                found = Some((owner, entry.state.is_open()));
            }
        }
        found.map_or_else(|| session_id.to_owned(), |(owner, _)| owner.to_owned())
    }

    /// The sessions above `session`, nearest first (bounded; a cycle ends it).
    fn ancestors<'a>(&'a self, session: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let mut at = self.sessions_parent(session);
        let mut depth = 0;
        iter::from_fn(move || {
            let here = at.filter(|s| *s != session && depth < MAX_DEPTH)?;
            depth += 1;
            at = self.sessions_parent(here);
            Some(here)
        })
    }

    /// The nearest ancestor of `session` a tab shows, when no tab shows `session` itself.
    fn showing_ancestor(&self, session: &str) -> Option<String> {
        if self.delivered(session) {
            return None;
        }
        self.ancestors(session).find(|a| self.tab_shows(a)).map(str::to_owned)
    }

    pub(crate) fn prompt_raised(
        &mut self,
        prompt: Prompt,
        event: Option<(EngineEvent, EventClass)>,
        now: Instant,
    ) {
        let session = prompt.session_id.clone();
        self.entry(&session);
        // The event that showed a request closed since (a resumed stream replaying it after
        // a restart closed the request): nothing new.
        if let Some((e, _)) = &event
            && self.prompts.closed_and_shown_by(&session, &prompt.request_id, &e.id)
        {
            return;
        }
        // An open request raised by another event: an earlier request of its id replayed.
        if let Some((e, _)) = &event {
            self.prompts.raised_again(&session, &prompt.request_id, &e.id);
        }
        // A repeat (the request is open and was shown) changes nothing.
        if self.prompts.raise(&prompt, now) == Raised::New {
            self.prompt_counters.shown += 1;
            if let Some(event) = event {
                self.prompts.shown_by(&session, &prompt.request_id, &event.0.id);
                self.keep_shown(&prompt, &event);
                self.show_raised(&prompt, event, now);
            }
        }
        self.touch(&session);
    }

    pub(crate) fn prompt_replayed(&mut self, prompt: Prompt, event_id: &str, now: Instant) {
        let session = prompt.session_id.clone();
        if self.prompts.closed_and_shown_by(&session, &prompt.request_id, event_id) {
            return;
        }
        self.prompts.raised_again(&session, &prompt.request_id, event_id);
        self.prompt_raised(prompt, None, now);
    }

    /// The event that shows a new prompt: in its session's lane, and copied to the nearest
    /// showing ancestor's when no tab shows the session.
    pub(crate) fn show_raised(
        &mut self,
        prompt: &Prompt,
        event: (EngineEvent, EventClass),
        now: Instant,
    ) {
        let session = prompt.session_id.as_str();
        if let Some(ancestor) = self.showing_ancestor(session) {
            self.prompts.show_on(session, &prompt.request_id, ancestor.clone());
            self.push_events(&ancestor, Some(session), iter::once(event.clone()), now);
        }
        self.engine_events(session, iter::once(event), now);
    }

    pub(crate) fn prompts_listed(
        &mut self,
        session_id: &str,
        mut prompts: Vec<(Prompt, Option<(EngineEvent, EventClass)>)>,
        now: Instant,
    ) {
        self.entry(session_id);
        let listed: Vec<Prompt> = prompts.iter().map(|(p, _)| p.clone()).collect();
        let (shown, closed) = self.prompts.relist(session_id, &listed, now);
        for change in closed {
            self.closed_silently(&change, now);
        }
        for i in shown {
            self.prompt_counters.shown += 1;
            if let Some((prompt, Some(event))) =
                prompts.get_mut(i).map(|(p, e)| (p.clone(), e.take()))
            {
                self.keep_shown(&prompt, &event);
                self.show_raised(&prompt, event, now);
            }
        }
        self.touch(session_id);
    }

    pub(crate) fn prompt_settled(
        &mut self,
        session_id: &str,
        request_id: &str,
        event: Option<(EngineEvent, EventClass)>,
        now: Instant,
    ) {
        let answering = self
            .prompts
            .get(session_id, request_id)
            .is_some_and(|e| matches!(e.state, PromptState::Answering { .. }));
        let change = self.prompts.settled(session_id, request_id);
        // The engine closed it while a webview's answer was on its way (an engine that
        // reports the close before the answer's own reply): that answer is what closed it.
        if answering
            && let Some(change) = change
            && let Some((decision, by)) = self.prompts.announce(session_id, request_id)
        {
            self.close_card(&change, decision, Some(by), now);
        }
        let shown_on = self.prompts.get(session_id, request_id).and_then(|e| e.shown_on.clone());
        if let Some(event) = event {
            if let Some(ancestor) = shown_on.filter(|a| self.knows_session(a)) {
                self.push_events(&ancestor, Some(session_id), iter::once(event.clone()), now);
            }
            self.engine_events(session_id, iter::once(event), now);
        }
        self.touch(session_id);
    }

    pub(crate) fn prompts_cancelled(&mut self, session_id: &str) {
        let (withdraw, _answering) = self.prompts.cancel_session(session_id);
        for change in withdraw {
            self.withdraws.push_back(Withdraw { prompt: change.prompt, why: change.state });
        }
        self.touch(session_id);
    }

    pub(crate) fn prompt_answered(
        &mut self,
        session_id: &str,
        request_id: &str,
        outcome: AnswerOutcome,
        now: Instant,
    ) {
        let before = self.prompts.get(session_id, request_id).map(|e| (e.state, e.kind));
        let Some(change) = self.prompts.answered(session_id, request_id, outcome) else {
            return;
        };
        if let (Some((PromptState::Answering { approve }, kind)), AnswerOutcome::Accepted) =
            (before, outcome)
            && kind.needs_trust()
        {
            let counter = if approve {
                &mut self.prompt_counters.write_allow
            } else {
                &mut self.prompt_counters.write_deny
            };
            *counter += 1;
        }
        if change.state == PromptState::Stale {
            self.closed_silently(&change, now);
        } else if outcome == AnswerOutcome::Accepted
            && let Some((decision, by)) = self.prompts.announce(session_id, request_id)
        {
            // The engine took it: every window resolves the card with how and by whom.
            self.close_card(&change, decision, Some(by), now);
        }
        self.touch(session_id);
    }

    /// The engine restarted, holding the sessions `held` (created on it since).
    pub(crate) fn engine_restarted(&mut self, held: &[String], now: Instant) {
        for change in self.prompts.cancel_all_but(held) {
            self.closed_silently(&change, now);
            self.touch(&change.prompt.session_id);
        }
    }

    pub(crate) fn expire_prompts(&mut self, now: Instant) {
        for change in self.prompts.handle_timeout(now) {
            self.touch(&change.prompt.session_id);
            self.withdraws.push_back(Withdraw { prompt: change.prompt, why: change.state });
        }
    }

    /// A prompt closed without an event of the engine's: the host's own
    /// [`PROMPT_CLOSED_EVENT`] resolves its card, where it was shown.
    pub(crate) fn closed_silently(&mut self, change: &Change, now: Instant) {
        let decision = match change.state {
            PromptState::Stale => "stale",
            PromptState::Settled => "settled",
            PromptState::Expired => "expired",
            _ => "cancelled",
        };
        self.close_card(change, decision.to_owned(), None, now);
    }

    /// Sends [`PROMPT_CLOSED_EVENT`] for `change`'s prompt, where it was shown.
    pub(crate) fn close_card(
        &mut self,
        change: &Change,
        decision: String,
        answered_by: Option<AnsweredBy>,
        now: Instant,
    ) {
        let session = change.prompt.session_id.as_str();
        if !self.knows_session(session) {
            return;
        }
        self.closings += 1;
        let closed = PromptClosedPayload {
            session_id: session.to_owned(),
            request_id: change.prompt.request_id.clone(),
            decision,
            answered_by,
        };
        let payload = match serde_json::to_value(closed) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        let event = EngineEvent {
            id: format!("bb-prompt-closed-{}", self.closings).into(),
            event_type: PROMPT_CLOSED_EVENT.into(),
            turn: None,
            ts: None,
            payload: payload.into(),
        };
        let event = (event, EventClass::PermissionResponse);
        if let Some(ancestor) = change.shown_on.as_deref().filter(|a| self.knows_session(a)) {
            let ancestor = ancestor.to_owned();
            self.push_events(&ancestor, Some(session), iter::once(event.clone()), now);
        }
        self.engine_events(session, iter::once(event), now);
    }
}
