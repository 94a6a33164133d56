//! One session's driver: creates the session through its bridge's first window (the others
//! select it, each with its own tab), then sends prompts one turn at a time until the soak
//! stops, answering each permission request from one or two of the bridge's windows at once.
//! A session whose engine was restarted (it is gone with it) or whose turn never ends is
//! replaced by a new one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::window::{Got, Window};
use super::{Bridge, Rig, check, lock};

/// Bound on one turn, faults included (a 25 s stall, a bridge restart).
const TURN_WAIT: Duration = Duration::from_secs(120);

/// Bound on a turn once the soak stops.
const STOP_WAIT: Duration = Duration::from_secs(30);

/// A session the soak created.
#[derive(Debug, Clone)]
pub(crate) struct Created {
    pub(crate) id: String,
    pub(crate) bridge: &'static str,
    /// Set when the soak deletes the session (its turn was stuck): how many events the
    /// engine had sent by then, the ones a window must have.
    pub(crate) deleted_after: Option<usize>,
}

/// What the drivers did.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) sessions: Mutex<Vec<Created>>,
    pub(crate) turns: AtomicU64,
    /// Turns that did not end within [`TURN_WAIT`].
    pub(crate) stuck: AtomicU64,
    /// Answers sent by windows.
    pub(crate) answers: AtomicU64,
    /// Answers refused because another window's answer won.
    pub(crate) refused: AtomicU64,
    /// Requests that more than one window's answer was accepted for.
    pub(crate) double_ok: AtomicU64,
    /// Permission requests that went stale: an answer was refused because the engine no
    /// longer knew the request (it restarted, or its bridge did and the engine forgot it).
    pub(crate) stale: AtomicU64,
    /// Permission requests still open when their engine was killed (gone with it).
    pub(crate) gone_with_engine: AtomicU64,
    /// Permission requests a window was shown that were never resolved before their turn
    /// was given up (neither answered, nor refused as answered elsewhere, nor stale).
    pub(crate) stuck_approvals: AtomicU64,
}

/// A small deterministic generator (splitmix64) for the windows' choices.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub(crate) async fn drive(
    rig: Arc<Rig>,
    bridges: Arc<Vec<Bridge>>,
    (bridge, slot): (usize, usize),
    seed: u64,
    stats: Arc<Stats>,
) {
    let bridge = &bridges[bridge];
    let mut rng = Rng::new(seed);
    let mut session: Option<(String, u64)> = None;
    let mut turn = 0u64;
    // The cards answered: a window may see one again.
    let mut answered = std::collections::HashSet::new();
    while !rig.stopping.load(Ordering::SeqCst) {
        let epoch = rig.engine_epoch.load(Ordering::SeqCst);
        let (id, born) = match session.take() {
            Some((id, born)) if born == epoch => (id, born),
            _ => match create(bridge, slot, &stats).await {
                Some(id) => (id, epoch),
                None => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            },
        };
        turn += 1;
        match one_turn(&rig, bridge, (&id, born), turn, &mut answered, &mut rng, &stats).await {
            TurnEnd::Done => {
                stats.turns.fetch_add(1, Ordering::SeqCst);
                session = Some((id, born));
            }
            TurnEnd::EngineGone => {}
            TurnEnd::Stuck => {
                stats.stuck.fetch_add(1, Ordering::SeqCst);
                report_stuck(&rig, bridge, &id, turn);
                let sent = rig.proxy.with_truth(|t| t.get(&id).map_or(0, |s| s.events.len()));
                if let Some(c) = lock(&stats.sessions).iter_mut().find(|c| c.id == id) {
                    c.deleted_after = Some(sent);
                }
                let _ = bridge.windows[0].call("bb.deleteSession", json!({"sessionId": id})).await;
            }
            TurnEnd::NotSent => {
                tokio::time::sleep(Duration::from_millis(500)).await;
                session = Some((id, born));
            }
        }
    }
}

/// Says what a stuck turn's windows last saw and what the engine last sent, so a stuck
/// turn can be looked into (`--trace` has every line).
fn report_stuck(rig: &Rig, bridge: &Bridge, session: &str, turn: u64) {
    let tail = |kinds: Vec<String>| kinds[kinds.len().saturating_sub(6)..].join(" ");
    let sent = rig.proxy.with_truth(|t| {
        t.get(session).map_or_else(Vec::new, |s| {
            s.events.iter().map(|e| format!("{}:{}", e.id, e.kind)).collect()
        })
    });
    let mut seen = String::new();
    for w in &bridge.windows {
        let log = w.log(session);
        let items = log.items.iter().map(|g| format!("{}:{}", g.id, g.kind)).collect();
        seen.push_str(&format!(" {}=[{}]", w.name, tail(items)));
        if let Some((at, id)) = log.covered.last() {
            seen.push_str(&format!(" (last resync at item {at}, its view up to {id})"));
        }
    }
    eprintln!(
        "soak: {}: turn {turn} of {session} stuck; the engine sent [{}];{seen}",
        bridge.name,
        tail(sent)
    );
    tracing::warn!(bridge = bridge.name, session, turn, "soak: a stuck turn");
}

/// The tab a window shows the driver `slot`'s session in (a tab shows one session).
fn tab(w: &Window, slot: usize) -> String {
    format!("tab-{}-{slot}", w.name)
}

/// Creates a session on the first window and selects it on the others.
async fn create(bridge: &Bridge, slot: usize, stats: &Stats) -> Option<String> {
    let first = &bridge.windows[0];
    let created = first.call("bb.createSession", json!({"tabId": tab(first, slot)})).await;
    let Some(id) = created["result"]["sessionId"].as_str().map(str::to_owned) else {
        tracing::warn!(bridge = bridge.name, "soak: createSession: {created}");
        eprintln!("soak: {}: createSession: {created}", bridge.name);
        return None;
    };
    lock(&stats.sessions).push(Created {
        id: id.clone(),
        bridge: bridge.name,
        deleted_after: None,
    });
    for w in &bridge.windows[1..] {
        // A window that is away selects it when it comes back (a failed call is retried).
        for _ in 0..20 {
            let selected =
                w.call("bb.selectSession", json!({"sessionId": id, "tabId": tab(w, slot)})).await;
            if selected["ok"] == true {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    Some(id)
}

enum TurnEnd {
    Done,
    EngineGone,
    Stuck,
    NotSent,
}

async fn one_turn(
    rig: &Rig,
    bridge: &Bridge,
    (session, born): (&str, u64),
    turn: u64,
    answered: &mut std::collections::HashSet<Card>,
    rng: &mut Rng,
    stats: &Stats,
) -> TurnEnd {
    let owner = &bridge.windows[0];
    let from = owner.log(session).items.len();
    // The events the engine sent before this turn's prompt: the turn's end comes after.
    let sent_at = rig.proxy.with_truth(|t| t.get(session).map_or(0, |s| s.events.len()));
    let text = format!("turn {turn}");
    let sent = owner.call("bb.sendMessage", json!({"sessionId": session, "text": text})).await;
    if sent["ok"] != true {
        return if rig.engine_epoch.load(Ordering::SeqCst) != born {
            TurnEnd::EngineGone
        } else {
            TurnEnd::NotSent
        };
    }
    let mut deadline = super::now() + TURN_WAIT;
    let mut stop_seen = false;
    // The requests shown and not resolved at the last try.
    let mut unresolved: Vec<(String, String)> = Vec::new();
    let open = |asks: &[(String, String)]| asks.len() as u64;
    loop {
        if rig.engine_epoch.load(Ordering::SeqCst) != born {
            stats.gone_with_engine.fetch_add(open(&unresolved), Ordering::SeqCst);
            return TurnEnd::EngineGone;
        }
        // Any window of the bridge may see the card first.
        let mut ended = false;
        let mut asks: Vec<(Card, String)> = Vec::new();
        for (n, w) in bridge.windows.iter().enumerate() {
            let log = w.log(session);
            let skip = if n == 0 { from } else { 0 };
            if n == 0 {
                ended = rig
                    .proxy
                    .with_truth(|t| check::turn_ended(t.get(session), sent_at, &log, from));
            }
            for (card, request) in cards(session, &log.items[skip.min(log.items.len())..]) {
                if !answered.contains(&card) && !asks.iter().any(|(c, _)| *c == card) {
                    asks.push((card, request));
                }
            }
        }
        if ended {
            return TurnEnd::Done;
        }
        unresolved.clear();
        for (card, request) in asks {
            let event = card.event.clone();
            match answer(bridge, session, (&event, &request), rng, stats).await {
                Answered::Settled => {
                    answered.insert(card);
                }
                Answered::Stale => {
                    stats.stale.fetch_add(1, Ordering::SeqCst);
                    answered.insert(card);
                }
                Answered::Retry => {
                    // No window could answer (away, or the bridge restarting): again shortly.
                    unresolved.push((event, request));
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
        if !stop_seen && rig.stopping.load(Ordering::SeqCst) {
            // The soak ends: the turn has a little longer to finish.
            stop_seen = true;
            deadline = deadline.min(super::now() + STOP_WAIT);
        }
        if super::now() >= deadline {
            stats.stuck_approvals.fetch_add(open(&unresolved), Ordering::SeqCst);
            return TurnEnd::Stuck;
        }
        let wait = owner.changed.notified();
        let _ = tokio::time::timeout(Duration::from_millis(250), wait).await;
    }
}

/// One showing of a permission card: a window answers each once. A card shown again — by
/// a restarted bridge (a new life), or anew by the same one (its answer could not be
/// delivered) — is answered again, as a person would answer the card in front of them: the
/// bridge refuses the answer when it still holds the first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Card {
    session: String,
    /// The event that showed it (`bb.approvePermission`'s `eventId`).
    event: String,
    /// The life of the window's bridge that showed it.
    life: u32,
    /// How many times that life showed it before.
    shown_before: usize,
}

/// The cards `items` (a window's record of `session`) show, with their request ids, in order.
pub(crate) fn cards(session: &str, items: &[Got]) -> Vec<(Card, String)> {
    let mut shown: std::collections::HashMap<(&str, u32), usize> = Default::default();
    let mut out = Vec::new();
    for got in items {
        let Some(request) = &got.request else { continue };
        let count = shown.entry((got.id.as_str(), got.life)).or_default();
        let card = Card {
            session: session.to_owned(),
            event: got.id.clone(),
            life: got.life,
            shown_before: *count,
        };
        *count += 1;
        out.push((card, request.clone()));
    }
    out
}

/// How a permission request's answers came back.
enum Answered {
    /// An answer was accepted, or refused because another window's answer won.
    Settled,
    /// Refused because the engine no longer knows the request.
    Stale,
    /// No window could answer (away, or its bridge restarting).
    Retry,
}

/// Whether a `permission_not_pending` refusal says the request went stale (the engine no
/// longer knows it), rather than that another answer won or that the card answered showed an
/// earlier request of its id.
pub(super) fn refused_as_stale(result: &Value) -> bool {
    let message = result["error"]["message"].as_str().unwrap_or_default();
    result["error"]["code"] == "permission_not_pending"
        && !message.contains("already answered")
        && !message.contains("being answered")
        && !message.contains("an earlier request of this id")
}

/// One or two windows answer at once; at most one answer may be accepted.
async fn answer(
    bridge: &Bridge,
    session: &str,
    (event, request): (&str, &str),
    rng: &mut Rng,
    stats: &Stats,
) -> Answered {
    let decision = if rng.below(4) == 0 { "deny" } else { "allow_once" };
    let count = if bridge.windows.len() > 1 && rng.below(2) == 0 { 2 } else { 1 };
    let first = rng.below(bridge.windows.len() as u64) as usize;
    let chosen: Vec<&Window> =
        (0..count).map(|k| &bridge.windows[(first + k) % bridge.windows.len()]).collect();
    let params = json!({"sessionId": session, "requestId": request, "decision": decision,
                        "eventId": event});
    let calls = chosen.iter().map(|w| w.call("bb.approvePermission", params.clone()));
    let results: Vec<Value> = futures_util::future::join_all(calls).await;
    stats.answers.fetch_add(results.len() as u64, Ordering::SeqCst);
    let accepted = results.iter().filter(|r| r["ok"] == true).count();
    let not_pending = |r: &&Value| r["error"]["code"] == "permission_not_pending";
    let stale = results.iter().filter(not_pending).filter(|r| refused_as_stale(r)).count();
    let refused = results.iter().filter(not_pending).count() - stale;
    stats.refused.fetch_add(refused as u64, Ordering::SeqCst);
    if accepted > 1 {
        stats.double_ok.fetch_add(1, Ordering::SeqCst);
        let names: Vec<&str> = chosen.iter().map(|w| w.name.as_str()).collect();
        eprintln!(
            "soak: {}: {request} of {session} accepted from {names:?}: {results:?}",
            bridge.name
        );
    }
    if accepted + refused > 0 {
        Answered::Settled
    } else if stale > 0 {
        Answered::Stale
    } else {
        Answered::Retry
    }
}
