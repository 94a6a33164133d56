//! The batcher: cadence by priority, immediate flushes, coalescing, and the publish-rate law
//! under simulated time.

use std::time::{Duration, Instant};

use bb_protocol::v1::EventId;
use proptest::prelude::*;
use serde_json::json;

use super::epoch;
use super::strategies::stream;
use crate::batch::{ACTIVE_CADENCE, BACKGROUND_GRID, Batch, Batcher, Priority};
use crate::class::{Classified, EventClass};
use crate::event::{Engine, RawEvent};
use crate::reduce::SessionView;

fn delta(id: &str, m: &str, text: &str) -> Classified {
    Classified::new(
        RawEvent::new(
            Engine::BreadBoard,
            "assistant.message.delta",
            json!({"item_id": m, "delta": text}),
        )
        .with_id(id)
        .with_turn(1),
    )
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn first_event_flushes_at_once_then_cadence() {
    let t0 = epoch();
    let mut b = Batcher::new(Priority::Active);
    assert_eq!(b.poll_timeout(), None);
    b.handle_event(t0, delta("1", "m", "a"));
    assert_eq!(b.poll_timeout(), Some(t0));
    assert_eq!(b.poll_flush(t0).unwrap().items.len(), 1);
    b.handle_event(t0 + ms(5), delta("2", "m", "b"));
    assert_eq!(b.poll_timeout(), Some(t0 + ACTIVE_CADENCE));
    assert!(b.poll_flush(t0 + ms(32)).is_none());
    assert!(b.poll_flush(t0 + ms(33)).is_some());
}

#[test]
fn cadence_follows_priority() {
    for (p, gap) in [(Priority::Active, 33), (Priority::Visible, 100), (Priority::Background, 500)]
    {
        let t0 = epoch();
        let mut b = Batcher::new(p);
        b.handle_event(t0, delta("1", "m", "a"));
        b.poll_flush(t0).unwrap();
        b.handle_event(t0 + ms(1), delta("2", "m", "b"));
        assert_eq!(b.poll_timeout(), Some(t0 + ms(gap)), "{p:?}");
    }
    let t0 = epoch();
    let mut b = Batcher::new(Priority::Background);
    b.handle_event(t0, delta("1", "m", "a"));
    b.poll_flush(t0).unwrap();
    b.handle_event(t0 + ms(1), delta("2", "m", "b"));
    b.set_priority(Priority::Active);
    assert_eq!(b.poll_timeout(), Some(t0 + ms(33)));
}

#[test]
fn permission_errors_and_run_end_flush_immediately() {
    for (kind, payload) in [
        ("permission_request", json!({"request_id": "p"})),
        ("error", json!({"message": "x"})),
        ("stream.gap", json!({})),
        ("run_finished", json!({})),
        ("completion", json!({})),
    ] {
        let t0 = epoch();
        let mut b = Batcher::new(Priority::Background);
        b.handle_event(t0, delta("1", "m", "a"));
        b.poll_flush(t0).unwrap();
        b.handle_event(t0 + ms(2), delta("2", "m", "b"));
        b.handle_event(
            t0 + ms(3),
            Classified::new(RawEvent::new(Engine::BreadBoard, kind, payload)),
        );
        let batch = b.poll_flush(t0 + ms(3)).unwrap();
        assert!(batch.immediate, "{kind}");
        assert_eq!(batch.items.len(), 2, "{kind}");
    }
}

#[test]
fn deltas_coalesce_by_message_and_turn_only_when_adjacent() {
    let t0 = epoch();
    let mut b = Batcher::new(Priority::Active);
    b.handle_event(t0, delta("0", "m", "x"));
    b.poll_flush(t0).unwrap();
    for (i, (m, t)) in
        [("m", "a"), ("m", "b"), ("n", "c"), ("m", "d"), ("m", "e")].iter().enumerate()
    {
        b.handle_event(t0 + ms(1), delta(&format!("{}", i + 1), m, t));
    }
    let other_turn = RawEvent::new(
        Engine::BreadBoard,
        "assistant.message.delta",
        json!({"item_id": "m", "delta": "f"}),
    )
    .with_turn(2);
    b.handle_event(t0 + ms(1), Classified::new(other_turn));
    let batch = b.poll_flush(t0 + ms(40)).unwrap();
    let texts: Vec<_> =
        batch.items.iter().map(|i| i.event.payload["delta"].as_str().unwrap().to_owned()).collect();
    assert_eq!(texts, ["ab", "c", "de", "f"]);
    assert_eq!(batch.items[0].event.id.as_deref(), Some("2"));
    assert_eq!(
        (batch.items[0].absorbed, batch.items[0].absorbed_last_id.as_deref()),
        (1, Some("1"))
    );
    assert_eq!(batch.event_count(), 6);
    assert_eq!(b.coalesced(), 2);
}

#[test]
fn kilo_deltas_coalesce_by_part() {
    let d = |id: &str, part: &str, t: &str| {
        Classified::new(
            RawEvent::new(
                Engine::Kilo,
                "message.part.delta",
                json!({"messageID": "m", "partID": part, "field": "text", "delta": t}),
            )
            .with_id(id),
        )
    };
    let t0 = epoch();
    let mut b = Batcher::default();
    for (id, p, t) in [("1", "p1", "a"), ("2", "p1", "b"), ("3", "p2", "c")] {
        b.handle_event(t0, d(id, p, t));
    }
    let batch = b.poll_flush(t0).unwrap();
    assert_eq!(batch.items.len(), 2);
    assert_eq!(batch.items[0].event.payload["delta"], "ab");
    assert_eq!(batch.items[0].class, EventClass::AssistantStream);
}

/// Drives a batcher over timed events with simulated time; returns (flush time, batch).
/// Checks that `flushes` account for the events of `ids` (their ids, in order), each exactly
/// once: every item stands for its own event and the `absorbed` ones before it, its id is
/// the last of those, and its `absorbed_last_id` the latest of the others that had one.
fn accounts_for(flushes: &[(Instant, Batch)], ids: &[Option<EventId>]) -> Result<(), String> {
    let mut at = 0;
    for item in flushes.iter().flat_map(|(_, b)| &b.items) {
        let n = usize::try_from(item.event_count()).unwrap();
        let Some(stands_for) = ids.get(at..at + n) else {
            return Err(format!("item at {at} stands for {n} events, past the {}", ids.len()));
        };
        let (own, absorbed) = stands_for.split_last().unwrap();
        if item.event.id != *own {
            return Err(format!("item at {at}: id {:?}, expected {own:?}", item.event.id));
        }
        let latest = absorbed.iter().rev().find_map(Clone::clone);
        if item.absorbed_last_id != latest {
            return Err(format!(
                "item at {at}: absorbed {:?}, expected {latest:?}",
                item.absorbed_last_id
            ));
        }
        at += n;
    }
    if at == ids.len() { Ok(()) } else { Err(format!("{at} of {} events", ids.len())) }
}

fn drive(events: &[(u64, Classified)], priority: Priority) -> Vec<(Instant, Batch)> {
    drive_with(Batcher::new(priority), epoch(), events)
}

/// [`drive`] with a batcher of the caller's, from `t0`.
fn drive_with(mut b: Batcher, t0: Instant, events: &[(u64, Classified)]) -> Vec<(Instant, Batch)> {
    let mut flushes = Vec::new();
    let mut now = t0;
    for (offset, item) in events {
        let at = now + ms(*offset);
        while let Some(due) = b.poll_timeout().filter(|d| *d <= at) {
            now = due.max(now);
            if let Some(batch) = b.poll_flush(now) {
                flushes.push((now, batch));
            }
        }
        now = at;
        b.handle_event(now, item.clone());
        if let Some(batch) = b.poll_flush(now) {
            flushes.push((now, batch));
        }
    }
    while let Some(due) = b.poll_timeout() {
        now = due.max(now);
        if let Some(batch) = b.poll_flush(now) {
            flushes.push((now, batch));
        }
    }
    flushes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Flushes are at least the cadence apart except immediate ones; nothing is lost or
    /// reordered; reducing the batches equals reducing the events one by one.
    #[test]
    fn publish_rate_law(events in stream(60), gaps in prop::collection::vec(prop_oneof![3 => 0u64..5, 1 => 0u64..200], 60), prio in prop_oneof![Just(Priority::Active), Just(Priority::Visible), Just(Priority::Background)]) {
        let timed: Vec<(u64, Classified)> = events.iter().cloned().zip(gaps).map(|(e, g)| (g, Classified::new(e))).collect();
        let flushes = drive(&timed, prio);
        for pair in flushes.windows(2) {
            let ((t1, _), (t2, b2)) = (&pair[0], &pair[1]);
            prop_assert!(b2.immediate || *t2 - *t1 >= prio.cadence(), "{:?} apart", *t2 - *t1);
        }
        let input_ids: Vec<_> = events.iter().map(|e| e.id.clone()).collect();
        prop_assert_eq!(accounts_for(&flushes, &input_ids), Ok(()));
        let mut batched = SessionView::new();
        for (_, batch) in &flushes {
            batched.apply_batch(batch);
        }
        let mut single = SessionView::new();
        for e in events {
            single.apply_event(e);
        }
        prop_assert_eq!(batched, single);
    }

    /// On the grid, the law holds as without it, and a background batch leaves either at
    /// once (an event's arrival: a first event after a quiet spell, an immediate class) or
    /// at a point of the grid; other priorities never wait for the grid.
    #[test]
    fn grid_keeps_the_law_and_its_points(events in stream(60), gaps in prop::collection::vec(prop_oneof![3 => 0u64..5, 1 => 0u64..900], 60), origin in 0u64..100, prio in prop_oneof![Just(Priority::Active), Just(Priority::Background)]) {
        let timed: Vec<(u64, Classified)> = events.iter().cloned().zip(gaps).map(|(e, g)| (g, Classified::new(e))).collect();
        let t0 = epoch();
        let origin = t0 + ms(origin);
        let flushes = drive_with(Batcher::new(prio).on_grid(origin), t0, &timed);
        let plain = drive_with(Batcher::new(prio), t0, &timed);
        // Both account for every event, in order (the grid may merge more).
        let input_ids: Vec<_> = events.iter().map(|e| e.id.clone()).collect();
        prop_assert_eq!(accounts_for(&flushes, &input_ids), Ok(()));
        prop_assert_eq!(accounts_for(&plain, &input_ids), Ok(()));
        if prio == Priority::Active {
            prop_assert_eq!(flushes.iter().map(|(t, _)| *t).collect::<Vec<_>>(), plain.iter().map(|(t, _)| *t).collect::<Vec<_>>());
        }
        let mut arrivals = Vec::new();
        let mut at = t0;
        for (gap, _) in &timed {
            at += ms(*gap);
            arrivals.push(at);
        }
        for pair in flushes.windows(2) {
            let ((t1, _), (t2, b2)) = (&pair[0], &pair[1]);
            prop_assert!(b2.immediate || *t2 - *t1 >= prio.cadence(), "{:?} apart", *t2 - *t1);
            let on_grid = t2.duration_since(origin).as_nanos() % BACKGROUND_GRID.as_nanos() == 0;
            let at_once = arrivals.contains(t2);
            prop_assert!(prio != Priority::Background || at_once || on_grid, "a flush {:?} after the origin", t2.duration_since(origin));
        }
    }

    /// Under a constant flood, the active session publishes between 20 and 60 updates/s.
    #[test]
    fn flood_rate_stays_in_budget(every_ms in 0u64..20, n in 300usize..600) {
        let timed: Vec<_> = (0..n).map(|i| (every_ms, delta(&i.to_string(), &format!("m{}", i % 3), "x"))).collect();
        let flushes = drive(&timed, Priority::Active);
        let span = flushes.last().unwrap().0 - flushes.first().unwrap().0;
        if span >= Duration::from_secs(1) {
            #[allow(clippy::cast_precision_loss)]
            let rate = (flushes.len() - 1) as f64 / span.as_secs_f64();
            prop_assert!((20.0..=60.0).contains(&rate), "{rate}/s");
        }
    }
}

#[test]
fn flush_now_publishes_before_the_deadline_and_restarts_the_cadence() {
    let t0 = epoch();
    let mut b = Batcher::new(Priority::Background);
    assert!(b.flush_now(t0).is_none());
    b.handle_event(t0, delta("1", "m", "a"));
    b.poll_flush(t0).unwrap();
    b.handle_event(t0 + ms(1), delta("2", "m", "b"));
    b.handle_event(t0 + ms(2), delta("3", "m", "c"));
    let batch = b.flush_now(t0 + ms(3)).unwrap();
    assert_eq!(batch.event_count(), 2);
    assert_eq!(b.pending_len(), 0);
    b.handle_event(t0 + ms(4), delta("4", "m", "d"));
    assert_eq!(b.poll_timeout(), Some(t0 + ms(503)));
}

/// A Kilo delta's body: its `delta` string last, as Kilo writes it, or first.
fn kilo_delta_body(text: &str, delta_first: bool) -> String {
    let ids = r#""sessionID":"s","messageID":"m","partID":"p","field":"text""#;
    let delta = format!(r#""delta":{}"#, json!(text));
    match delta_first {
        true => format!("{{{delta},{ids}}}"),
        false => format!("{{{ids},{delta}}}"),
    }
}

/// A Kilo delta as the Kilo mapping hands it over: its body as text, with the memo of its
/// one read (`Delta::memo`).
fn kilo_delta_read(id: &str, text: &str, delta_first: bool) -> Classified {
    let body = kilo_delta_body(text, delta_first);
    let raw = serde_json::value::RawValue::from_string(body).unwrap();
    let mut payload = bb_payload::Payload::from_text(raw);
    let read: crate::kilo::Delta<'_> = payload.read();
    let memo = crate::kilo::Delta::memo(
        [read.message_id, read.part_id, read.field, read.delta],
        payload.text(),
    );
    payload.set_memo(memo);
    let mut ev =
        RawEvent::new(Engine::Kilo, "message.part.delta", serde_json::Value::Null).with_id(id);
    ev.payload = payload;
    Classified::new(ev)
}

proptest! {
    /// Merged Kilo deltas are what a merge through the tree makes: the same JSON, the same
    /// line for the webview (the engine's compact text), and a memo a read agrees with;
    /// whether their text was spliced (no escapes in either) or not (quotes, backslashes,
    /// control characters, non-ASCII text), and whether the ids come after the text (their
    /// places then move with its length) or before it. Twice on one batcher: the second
    /// merge starts in the first one's buffer.
    #[test]
    fn merged_kilo_deltas_are_the_tree_merge(
        texts in prop::collection::vec("(?s)[a-z \\[\\]{}\"\\\\\n\u{1}é😀]{0,12}", 2..6),
        delta_first in any::<bool>(),
    ) {
        let t0 = epoch();
        let mut b = Batcher::default();
        for round in 0..2u64 {
            let now = t0 + ms(round * 1_000);
            for (i, t) in texts.iter().enumerate() {
                b.handle_event(now, kilo_delta_read(&i.to_string(), t, delta_first));
            }
            let batch = b.poll_flush(now).unwrap();
            prop_assert_eq!(batch.items.len(), 1);
            let merged = &batch.items[0].event;
            let all: String = texts.concat();
            let want = kilo_delta_body(&all, delta_first);
            prop_assert_eq!(&*merged.payload, &serde_json::from_str::<serde_json::Value>(&want).unwrap());
            prop_assert_eq!(serde_json::to_string(&merged.payload).unwrap(), want);
            let last_id = (texts.len() - 1).to_string();
            prop_assert_eq!(merged.id.as_deref(), Some(last_id.as_str()));
            if let Some(memo) = merged.payload.memo::<crate::kilo::DeltaMemo>() {
                prop_assert_eq!(memo.fields(&merged.payload), merged.payload.read::<crate::kilo::Delta<'_>>());
                let plain = !texts.iter().any(|t| escaped(t));
                prop_assert_eq!(memo.span().is_some(), plain);
            }
            let spliced = merged.payload.text().is_some();
            let escapes = texts.iter().any(|t| escaped(t));
            prop_assert!(spliced || escapes, "plain deltas merge without a tree");
        }
    }
}

/// A BreadBoard delta's payload text: `item_id` and `seq` before or after its `delta`.
fn bb_delta_body(text: &str, delta_first: bool) -> String {
    let delta = format!(r#""delta":{}"#, json!(text));
    match delta_first {
        true => format!(r#"{{{delta},"item_id":"m","seq":1}}"#),
        false => format!(r#"{{"item_id":"m",{delta},"seq":1}}"#),
    }
}

/// A BreadBoard delta as the BreadBoard client hands it over: its payload as its text, with
/// the memo of its text fields found in the scan that checked it.
fn bb_delta_read(id: &str, text: &str, delta_first: bool) -> Classified {
    let body = bb_delta_body(text, delta_first);
    let fields = crate::breadboard::TEXT_FIELDS;
    let (mut payload, found) = bb_payload::Payload::as_written_fields(&body, fields).unwrap();
    if let Some(memo) = crate::breadboard::TextMemo::new(found) {
        payload.set_memo(memo);
    }
    let mut ev =
        RawEvent::new(Engine::BreadBoard, "assistant.message.delta", serde_json::Value::Null)
            .with_id(id);
    ev.payload = payload;
    Classified::new(ev)
}

proptest! {
    /// Merged BreadBoard deltas are what a merge through the tree makes: the same JSON, the
    /// same text for the webview, and a memo a read agrees with; whether their text was
    /// spliced (no escapes in any) or written by the tree's rules, and whether the fields
    /// after the text move with its length or not. Twice on one batcher: the second merge
    /// starts in the first one's buffer.
    #[test]
    fn merged_breadboard_deltas_are_the_tree_merge(
        texts in prop::collection::vec("(?s)[a-z \\[\\]{}\"\\\\\n\u{1}é😀]{0,12}", 2..6),
        delta_first in any::<bool>(),
    ) {
        let t0 = epoch();
        let mut b = Batcher::default();
        for round in 0..2u64 {
            let now = t0 + ms(round * 1_000);
            for (i, t) in texts.iter().enumerate() {
                b.handle_event(now, bb_delta_read(&i.to_string(), t, delta_first));
            }
            let batch = b.poll_flush(now).unwrap();
            prop_assert_eq!(batch.items.len(), 1);
            let merged = &batch.items[0].event;
            let want = bb_delta_body(&texts.concat(), delta_first);
            prop_assert_eq!(&*merged.payload, &serde_json::from_str::<serde_json::Value>(&want).unwrap());
            prop_assert_eq!(serde_json::to_string(&merged.payload).unwrap(), want);
            let plain = !texts.iter().any(|t| escaped(t));
            let memo = merged.payload.memo::<crate::breadboard::TextMemo>();
            prop_assert_eq!(memo.is_some(), plain, "the memo is kept where the text is spliced");
            if let Some(memo) = memo {
                let read: crate::breadboard::BbText<'_> = merged.payload.read();
                prop_assert_eq!(memo.fields(&merged.payload), read);
            }
        }
    }
}

/// Whether JSON writes `text` with escapes.
fn escaped(text: &str) -> bool {
    text.contains(['"', '\\', '\n', '\u{1}'])
}

/// A background batch that waits out its cadence is due at the grid's next point; a first
/// event after a quiet spell and an immediate class leave at once; the selected session's
/// cadence is not moved.
#[test]
fn background_cadence_flushes_fall_on_the_grid() {
    let t0 = epoch();
    let mut b = Batcher::new(Priority::Background).on_grid(t0);
    b.handle_event(t0 + ms(7), delta("1", "m", "a"));
    assert_eq!(b.poll_timeout(), Some(t0 + ms(7)), "first event at once");
    assert!(b.poll_flush(t0 + ms(7)).is_some());
    b.handle_event(t0 + ms(8), delta("2", "m", "b"));
    assert_eq!(b.poll_timeout(), Some(t0 + ms(600)), "507 ms moved up to the grid");
    assert!(b.poll_flush(t0 + ms(599)).is_none());
    assert!(b.poll_flush(t0 + ms(600)).is_some());
    let stop = Classified::with_class(
        EventClass::RunErrorOrGap,
        RawEvent::new(Engine::BreadBoard, "error", json!({"message": "x"})).with_id("3"),
    );
    b.handle_event(t0 + ms(601), stop);
    assert_eq!(b.poll_timeout(), Some(t0 + ms(601)), "an immediate class at once");
    let mut active = Batcher::new(Priority::Active).on_grid(t0);
    active.handle_event(t0 + ms(7), delta("1", "m", "a"));
    assert!(active.poll_flush(t0 + ms(7)).is_some());
    active.handle_event(t0 + ms(8), delta("2", "m", "b"));
    assert_eq!(active.poll_timeout(), Some(t0 + ms(40)), "33 ms, not on the grid");
}

#[test]
fn a_shown_session_streaming_faster_than_its_cadence_has_a_next_beat() {
    let t0 = epoch();
    let mut b = Batcher::new(Priority::Active);
    assert_eq!(b.next_beat(), None, "nothing flushed yet");
    b.handle_event(t0, delta("1", "m", "a"));
    b.poll_flush(t0).unwrap();
    assert_eq!(b.next_beat(), None, "a first event after a quiet spell: no stream yet");
    b.handle_event(t0 + ms(5), delta("2", "m", "b"));
    b.poll_flush(t0 + ms(33)).unwrap();
    assert_eq!(b.next_beat(), Some(t0 + ms(66)), "streaming: the next cadence point");
    // The stream pauses; the next event after the cadence flushes at once and ends the beat.
    b.handle_event(t0 + ms(200), delta("3", "m", "c"));
    b.poll_flush(t0 + ms(200)).unwrap();
    assert_eq!(b.next_beat(), None);

    let mut hidden = Batcher::new(Priority::Background).on_grid(t0);
    hidden.handle_event(t0, delta("1", "m", "a"));
    hidden.poll_flush(t0).unwrap();
    hidden.handle_event(t0 + ms(5), delta("2", "m", "b"));
    hidden.poll_flush(t0 + ms(500)).unwrap();
    assert_eq!(hidden.next_beat(), None, "a background session waits for the grid");
}

/// One step of a batcher's life: an event after a gap (ms), a priority change, or a poll.
#[derive(Debug, Clone)]
enum Step {
    Event(u64, Box<RawEvent>),
    Priority(Priority),
    Poll(u64),
    FlushNow(u64),
}

fn step() -> impl Strategy<Value = Step> {
    let prio =
        prop_oneof![Just(Priority::Active), Just(Priority::Visible), Just(Priority::Background)];
    prop_oneof![
        4 => (0u64..300, super::strategies::bb_event()).prop_map(|(g, e)| Step::Event(g, Box::new(e))),
        1 => prio.prop_map(Step::Priority),
        2 => (0u64..700).prop_map(Step::Poll),
        1 => (0u64..50).prop_map(Step::FlushNow),
    ]
}

proptest! {
    /// The due time the batcher keeps is the one its times give at every step, on the grid
    /// or not: queuing, immediate events, priority changes, timed and forced flushes.
    #[test]
    fn kept_due_time_is_the_one_found(steps in prop::collection::vec(step(), 1..40), on_grid in any::<bool>()) {
        let t0 = epoch();
        let mut b = Batcher::new(Priority::Background);
        if on_grid {
            b = b.on_grid(t0 + ms(7));
        }
        let mut now = t0;
        for step in steps {
            match step {
                Step::Event(gap, event) => {
                    now += ms(gap);
                    b.handle_event(now, Classified::new(*event));
                }
                Step::Priority(p) => b.set_priority(p),
                Step::Poll(gap) => {
                    now += ms(gap);
                    b.poll_flush(now);
                }
                Step::FlushNow(gap) => {
                    now += ms(gap);
                    b.flush_now(now);
                }
            }
            prop_assert_eq!(b.poll_timeout(), b.find_due());
        }
    }
}
