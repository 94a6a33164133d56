//! The verdict on small hand-made records: what counts as delivered, merged, declared, lost,
//! duplicated or redelivered, and how approvals are counted.

use super::check::{Approvals, Tally, approvals, turn_ended, verdict};
use super::proxy::{Sent, SessionTruth};
use super::window::{Got, SessionLog};

/// The engine's events: `user_message` then `kinds`, ids 1, 2, …; `d:TEXT` is a delta of
/// message `m` with that text.
fn truth(kinds: &[&str]) -> SessionTruth {
    let mut t = SessionTruth::default();
    for (n, k) in std::iter::once(&"user_message").chain(kinds).enumerate() {
        let data = match k.strip_prefix("d:") {
            Some(text) => serde_json::json!({"session_id": "s", "type": "assistant.message.delta",
                "turn": 1, "payload": {"item_id": "m", "delta": text}}),
            None => serde_json::json!({"session_id": "s", "type": k, "payload": {}}),
        };
        let (_, sent) = Sent::parse(&(n + 1).to_string(), &data.to_string()).unwrap();
        t.record(sent);
    }
    t
}

/// A window's record: `id` or `id:TEXT` (a delta's text), `!` a declared resync, `|` the
/// bridge restarted.
fn log(items: &[&str]) -> SessionLog {
    let mut log = SessionLog::default();
    let mut life = 0;
    for item in items {
        match *item {
            "!" => log.resyncs.push(log.items.len()),
            "|" => life += 1,
            _ => {
                let (id, text) = item.split_once(':').unwrap_or((item, ""));
                log.items.push(Got {
                    id: id.to_owned(),
                    kind: String::new(),
                    text: text.to_owned(),
                    life,
                    request: None,
                });
            }
        }
    }
    log
}

fn check(kinds: &[&str], got: &[&str]) -> Tally {
    verdict(&truth(kinds), None, &log(got)).0
}

#[test]
fn every_event_once_is_clean() {
    let t = check(&["turn_start", "completion"], &["1", "2", "3"]);
    assert_eq!((t.checked, t.delivered, t.lost, t.duplicated), (3, 3, 0, 0));
}

#[test]
fn a_missing_event_is_lost() {
    let (t, lost, _) = verdict(&truth(&["turn_start", "completion"]), None, &log(&["1", "3"]));
    assert_eq!(t.lost, 1);
    assert_eq!(lost, ["2:turn_start"]);
}

#[test]
fn a_coalesced_delta_covers_the_deltas_merged_into_it_and_no_others() {
    let t = check(&["d:a", "d:b", "d:c", "completion"], &["1", "4:abc", "5"]);
    assert_eq!((t.delivered, t.merged, t.lost, t.garbled), (3, 2, 0, 0));
    let t = check(&["d:a", "d:b", "d:c", "completion"], &["1", "4:bc", "5"]);
    assert_eq!((t.merged, t.lost), (1, 1), "the first delta's text is missing");
    let t = check(&["d:a", "d:b"], &["1", "3:xb"]);
    assert_eq!(t.garbled, 1, "text not made of the merged deltas");
}

#[test]
fn a_declared_resync_covers_what_came_before_the_next_event() {
    let t = check(&["turn_start", "tool_call", "completion"], &["1", "!", "4"]);
    assert_eq!((t.declared, t.lost, t.resyncs), (2, 0, 1));
}

#[test]
fn twice_in_one_life_is_duplicated_and_again_after_a_restart_is_redelivered() {
    let t = check(&["completion"], &["1", "2", "2"]);
    assert_eq!((t.duplicated, t.redelivered), (1, 0));
    let t = check(&["completion"], &["1", "2", "|", "2"]);
    assert_eq!((t.duplicated, t.redelivered), (0, 1));
}

#[test]
fn approvals_count_the_decisions_between_two_requests() {
    let mut t = truth(&["permission_request", "tool_result", "permission_request", "completion"]);
    // The first request (index 1) told twice, the second (index 3) never.
    t.decisions = vec![2, 3];
    assert_eq!(
        approvals(&t),
        Approvals {
            raised: 2,
            answered_once: 0,
            answered_twice: 1,
            unanswered: 1,
            repeats_refused: 0
        }
    );
    t.decisions = vec![2, 4];
    assert_eq!(approvals(&t).answered_once, 2);
    // A repeat the engine refused (409) is not a second decision taken.
    t.refused = vec![2];
    let a = approvals(&t);
    assert_eq!((a.answered_once, a.answered_twice, a.repeats_refused), (2, 0, 1));
}

#[test]
fn a_deleted_session_is_checked_up_to_its_delete() {
    // Events 1..=3 sent before the delete; 4 (the stopped turn's end) after it.
    let events = truth(&["turn_start", "tool_call", "completion"]);
    let (t, lost, _) = verdict(&events, Some(3), &log(&["1", "2", "3"]));
    assert_eq!((t.checked, t.lost), (3, 0), "{lost:?}");
    let (t, lost, _) = verdict(&events, None, &log(&["1", "2", "3"]));
    assert_eq!((t.lost, lost), (1, vec!["4:completion".to_owned()]));
}

#[test]
fn a_refusal_because_the_engine_forgot_the_request_is_stale_one_because_another_answer_won_is_not()
{
    use super::driver::refused_as_stale;
    let refusal = |message: &str| serde_json::json!({"ok": false, "error": {"code": "permission_not_pending", "message": message}});
    let won = refusal("request perm-1 is not pending (already answered: allow_once by tab-a)");
    assert!(!refused_as_stale(&won));
    assert!(!refused_as_stale(&refusal("request perm-1 is not pending (being answered)")));
    assert!(refused_as_stale(&refusal(
        "request perm-1 is not pending (no longer known to the engine)"
    )));
    assert!(refused_as_stale(&refusal("no permission request is active")));
    let other = serde_json::json!({"ok": false, "error": {"code": "engine_unavailable"}});
    assert!(!refused_as_stale(&other));
}

#[test]
fn a_turn_ends_for_a_window_with_its_run_finished_or_a_resync_whose_view_covers_it() {
    // Ids 1-2 (a turn before the prompt), then this turn: 3 user_message … 6 run_finished.
    let t = truth(&["run_finished", "user_message", "turn_start", "completion", "run_finished"]);
    let ended = |items: &[&str], covered: &[&str]| {
        let mut got = log(items);
        for g in &mut got.items {
            g.kind = t.events.iter().find(|e| e.id == g.id).unwrap().kind.clone();
        }
        got.covered = covered.iter().map(|id| (got.items.len(), (*id).to_owned())).collect();
        turn_ended(Some(&t), 2, &got, 2)
    };
    assert!(
        !ended(&["1", "2", "3", "4"], &[]),
        "the run_finished before the prompt is not this turn's"
    );
    assert!(ended(&["1", "2", "3", "4", "5", "6"], &[]));
    // A restarted bridge sends again what its saved stream position lags: the turn before's
    // run_finished after the prompt (the soak then sent the next prompt while this turn ran).
    assert!(!ended(&["1", "2", "|", "2", "3"], &[]), "an earlier turn's run_finished again");
    // After a bridge restart the window binding the session second is sent the view: the
    // turn ended for it when that view covers the turn's run_finished (the soak used to
    // wait for the event itself and gave such turns up as stuck).
    assert!(ended(&["1", "2", "3"], &["6"]));
    assert!(!ended(&["1", "2", "3"], &["5"]), "a view from before the run ended");
    assert!(!ended(&["1", "2"], &["2"]), "a view of the turn before");
    assert!(!turn_ended(None, 2, &log(&["1", "2"]), 2), "nothing known of the session");
}

#[test]
fn a_card_shown_again_by_a_restarted_bridge_or_anew_is_a_card_to_answer_again() {
    use super::driver::cards;
    let card = |id: &str, life: u32| Got {
        id: id.to_owned(),
        kind: "permission_request".to_owned(),
        text: String::new(),
        life,
        request: Some("permission_1".to_owned()),
    };
    let other = Got { request: None, kind: "run_finished".to_owned(), ..card("9", 0) };
    // Two windows of one bridge showing the card once: one card (answered once).
    let a = cards("s", &[card("7", 0), other.clone()]);
    let b = cards("s", &[card("7", 0)]);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0], b[0]);
    // The bridge was killed with the answer not saved (or its refusal said before it was):
    // the restarted bridge shows the card again, pending; the driver used to remember the
    // card by its event id and never answered it again, and the turn was stuck.
    let again = cards("s", &[card("7", 0), card("7", 1)]);
    assert_eq!(again.len(), 2);
    assert_ne!(again[0].0, again[1].0, "a new life's card is answered again");
    // Shown anew by the same life (an answer it could not deliver): answered again too.
    let anew = cards("s", &[card("7", 1), card("7", 1)]);
    assert_ne!(anew[0].0, anew[1].0);
    assert_eq!(anew[1].1, "permission_1");
}
