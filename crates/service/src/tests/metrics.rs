//! `Metrics`: each counter moves on what it names, time to first token is measured from the
//! send to the first assistant text written, percentiles by nearest rank.

use std::time::{Duration, Instant};

use crate::metrics::Metrics;

#[test]
fn counters_follow_what_they_name() {
    let mut m = Metrics::default();
    let t0 = origin();
    m.request();
    m.request();
    m.message_sent("s1", t0);
    m.events_written(Some("s1"), ["turn.start", "unknown_event"], t0 + Duration::from_millis(5));
    m.events_written(Some("s2"), ["transcript.assistant_stream"], t0 + Duration::from_millis(7));
    m.events_written(
        Some("s1"),
        ["transcript.assistant_stream", "permission.request"],
        t0 + Duration::from_millis(40),
    );
    m.events_written(Some("s1"), ["transcript.assistant_stream"], t0 + Duration::from_millis(90));
    m.error("engine_auth");
    m.error("path_outside_workspace");
    m.error("engine_unavailable");
    m.error("engine_unavailable");
    m.connection(false);
    m.connection(true);
    m.connection(false);
    m.connection(false);
    m.crash(false);
    m.crash(true);
    m.restart();
    m.breaker_tripped();
    m.continuity_lost();
    let s = m.snapshot_with(&[
        ("bridge.rehydrations", 1),
        ("tools.write.allow_count", 1),
        ("tools.write.deny_count", 2),
    ]);
    assert_eq!(s["kilo.cli.chat.ttft_ms"]["count"], 1, "{s}");
    assert_eq!(s["kilo.cli.chat.ttft_ms"]["last"], 40.0, "{s}");
    assert_eq!(s["kilo.cli.sse.reconnect_count"], 1);
    assert_eq!(m.reconnects(), 1);
    assert_eq!(s["kilo.cli.sse.auth_failures"], 2);
    assert_eq!(s["kilo.cli.session.rehydrate_fail_count"], 1);
    assert_eq!(s["kilo.cli.adapter.unknown_event_type"], 1);
    assert_eq!(s["kilo.cli.server.crash_count"], 2);
    assert_eq!(s["kilo.cli.permissions.prompt_count"], 1);
    assert_eq!(s["kilo.cli.security.out_of_scope_path_attempt_count"], 1);
    assert_eq!(s["kilo.cli.tools.write.allow_count"], 1);
    assert_eq!(s["kilo.cli.tools.write.deny_count"], 2);
    assert_eq!(s["bridge"]["requests"], 2);
    assert_eq!(s["bridge"]["events"], 6);
    assert_eq!(s["bridge"]["errors"]["engine_unavailable"], 2);
    assert_eq!(s["bridge"]["engineRestarts"], 1);
    assert_eq!(s["bridge"]["breakerTrips"], 1);
    assert_eq!(s["bridge"]["rehydrations"], 1);
}

#[test]
fn ttft_percentiles_are_nearest_rank_over_recent_turns() {
    let mut m = Metrics::default();
    let t0 = origin();
    assert!(m.snapshot()["kilo.cli.chat.ttft_ms"]["p95"].is_null());
    for ms in 1..=300u64 {
        m.message_sent("s", t0);
        m.events_written(
            Some("s"),
            ["transcript.assistant_stream"],
            t0 + Duration::from_millis(ms),
        );
    }
    let s = m.snapshot();
    let ttft = &s["kilo.cli.chat.ttft_ms"];
    // The last 256 turns are 45..=300 ms.
    assert_eq!(ttft["count"], 300);
    assert_eq!(ttft["last"], 300.0);
    assert_eq!(ttft["p50"], 172.0);
    assert_eq!(ttft["p95"], 288.0);
    assert_eq!(ttft["max"], 300.0);
}

/// Any fixed instant: the counters only compare instants they are given.
#[allow(clippy::disallowed_methods)]
fn origin() -> Instant {
    Instant::now()
}
