//! `RequestOrder`: responses leave in request order; state changes run alone and in order;
//! a property over random request mixes and completion orders.

use bb_protocol::v1::{SessionParams, V1Call, V1Request, V1Response};
use proptest::prelude::*;
use serde_json::json;

use crate::order::{RequestOrder, Ticket, changes_state};

fn read(id: &str) -> V1Request {
    V1Request::new(id, V1Call::ListSessions(Default::default()))
}

fn change(id: &str) -> V1Request {
    V1Request::new(id, V1Call::Stop(SessionParams { session_id: "s".into(), ..Default::default() }))
}

fn ok(id: &str) -> V1Response {
    V1Response::success(id, json!({}))
}

fn ids(started: &[(Ticket, V1Request)]) -> Vec<String> {
    started.iter().map(|(_, r)| r.id.clone()).collect()
}

fn res_ids(responses: &[(V1Response, ())]) -> Vec<String> {
    responses.iter().map(|(r, ())| r.id.clone()).collect()
}

#[test]
fn pipelined_reads_run_together_and_answer_in_request_order() {
    let mut order: RequestOrder = RequestOrder::default();
    let a = order.admit(read("init-1"));
    let b = order.admit(read("init-2"));
    assert_eq!((ids(&a), ids(&b)), (vec!["init-1".to_owned()], vec!["init-2".to_owned()]));
    // The second finishes first: held until the first is answered.
    let (due, _) = order.complete(b[0].0, ok("init-2"), ());
    assert!(due.is_empty());
    let (due, _) = order.complete(a[0].0, ok("init-1"), ());
    assert_eq!(res_ids(&due), ["init-1", "init-2"]);
    assert_eq!(order.unanswered(), 0);
}

#[test]
fn a_state_change_waits_for_earlier_requests_and_blocks_later_ones() {
    let mut order: RequestOrder = RequestOrder::default();
    let r1 = order.admit(read("r1"));
    assert!(order.admit(change("c1")).is_empty(), "c1 waits for r1");
    assert!(order.admit(read("r2")).is_empty(), "r2 does not overtake c1");
    assert!(order.admit(change("c2")).is_empty());
    let (due, started) = order.complete(r1[0].0, ok("r1"), ());
    assert_eq!((res_ids(&due), ids(&started)), (vec!["r1".to_owned()], vec!["c1".to_owned()]));
    let (due, started) = order.complete(started[0].0, ok("c1"), ());
    assert_eq!((res_ids(&due), ids(&started)), (vec!["c1".to_owned()], vec!["r2".to_owned()]));
    let (_, started) = order.complete(started[0].0, ok("r2"), ());
    assert_eq!(ids(&started), ["c2"]);
}

#[test]
fn immediate_answers_take_their_turn_and_abandon_answers_everything_once() {
    let mut order: RequestOrder = RequestOrder::default();
    let slow = order.admit(read("slow"));
    assert!(order.answer_now(ok("rejected")).is_empty(), "held behind `slow`");
    order.admit(change("queued"));
    let due = order.abandon(|id| V1Response::failure(id, bb_protocol::v1::V1Error::new("x", "y")));
    assert_eq!(res_ids(&due), ["slow", "rejected", "queued"]);
    assert!(!due[0].0.ok);
    assert!(due[1].0.ok);
    // A late completion of an abandoned request releases nothing twice.
    let (due, started) = order.complete(slow[0].0, ok("slow"), ());
    assert!(due.is_empty() && started.is_empty());
}

proptest! {
    /// Any mix of reads and changes, completed in any order: every request is answered once,
    /// in request order; a change never runs beside anything; nothing starts before an
    /// earlier change has finished.
    #[test]
    fn order_holds_for_any_completion_order(kinds in proptest::collection::vec(any::<bool>(), 1..30), picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..200)) {
        let mut order: RequestOrder = RequestOrder::default();
        let mut running: Vec<(Ticket, V1Request)> = Vec::new();
        let mut answered = Vec::new();
        let mut finished_changes = 0usize;
        for (n, change_kind) in kinds.iter().enumerate() {
            let req = if *change_kind { change(&n.to_string()) } else { read(&n.to_string()) };
            running.extend(order.admit(req));
        }
        let mut picks = picks.into_iter();
        while !running.is_empty() {
            let changes = running.iter().filter(|(_, r)| changes_state(r.call.method())).count();
            prop_assert!(changes == 0 || running.len() == 1, "a change ran beside another request");
            for (_, r) in &running {
                let n: usize = r.id.parse().unwrap();
                let earlier_changes = kinds[..n].iter().filter(|k| **k).count();
                prop_assert!(earlier_changes <= finished_changes, "{} started before an earlier change finished", n);
            }
            let at = picks.next().map_or(0, |i| i.index(running.len()));
            let (ticket, req) = running.remove(at);
            if changes_state(req.call.method()) {
                finished_changes += 1;
            }
            let (due, started) = order.complete(ticket, ok(&req.id), ());
            answered.extend(res_ids(&due));
            running.extend(started);
        }
        let expected: Vec<String> = (0..kinds.len()).map(|n| n.to_string()).collect();
        prop_assert_eq!(answered, expected);
        prop_assert_eq!(order.unanswered(), 0);
    }
}
