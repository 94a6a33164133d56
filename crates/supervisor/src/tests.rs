//! Unit tests of the pure parts: env allow-list, redaction, restart policy and capped line
//! reading.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use secrecy::SecretString;

use crate::env::{inherit_allowed, is_allowed};
use crate::redact::{LineRedactor, REDACTED};
use crate::restart::{CrashHistory, RestartDecision, RestartPolicy};
use crate::tokio_spawner::read_capped_line;

#[test]
fn env_allow_list() {
    for (name, allowed) in [
        ("PATH", true),
        ("HOME", true),
        ("LANG", true),
        ("LC_ALL", true),
        ("XDG_CONFIG_HOME", true),
        ("KILO_DISABLE_AUTOUPDATE", true),
        ("KILO_SERVER_PASSWORD", false),
        ("KILO_SERVER_USERNAME", false),
        ("OPENAI_API_KEY", false),
        ("AWS_SECRET_ACCESS_KEY", false),
        ("LD_PRELOAD", false),
        ("path", false),
    ] {
        assert_eq!(is_allowed(name), allowed, "{name}");
    }
    let parent = [("PATH", "/bin"), ("SECRET", "x"), ("XDG_DATA_HOME", "/d")]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
    let kept = inherit_allowed(parent);
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[0].0, "PATH");
    assert_eq!(kept[1].0, "XDG_DATA_HOME");
}

#[test]
fn redaction_and_cap() {
    let r = LineRedactor::new(vec![SecretString::from("s3cr3t"), SecretString::from("")], 32);
    assert_eq!(r.apply(b"pw=s3cr3t and s3cr3t", 0), format!("pw={REDACTED} and {REDACTED}"));
    assert_eq!(r.apply(b"plain", 0), "plain");
    let long = r.apply(&[b'a'; 40], 0);
    assert_eq!(long, format!("{} …[8 bytes truncated]", "a".repeat(32)));
    assert_eq!(r.apply(b"ab", 5), "ab …[5 bytes truncated]");
    // Never cuts inside a UTF-8 character.
    let wide = "é".repeat(20);
    let out = r.apply(wide.as_bytes(), 0);
    assert!(out.starts_with(&"é".repeat(16)), "{out}");
    // A secret straddling the cap is redacted before the cut, so no fragment survives.
    let mut straddle = "x".repeat(29).into_bytes();
    straddle.extend_from_slice(b"s3cr3t");
    assert!(!r.apply(&straddle, 0).contains("s3c"));
}

#[test]
#[allow(clippy::disallowed_methods)] // one real instant to count from; time then moves by hand
fn restart_backoff_then_breaker() {
    let policy = RestartPolicy {
        initial_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(300),
        max_crashes: 4,
        window: Duration::from_secs(60),
    };
    let t0 = Instant::now();
    let mut h = CrashHistory::new(policy);
    let at = |s| t0 + Duration::from_secs(s);
    assert_eq!(
        h.record_crash(at(0)),
        RestartDecision::Restart { after: Duration::from_millis(100), crashes: 1 }
    );
    assert_eq!(
        h.record_crash(at(1)),
        RestartDecision::Restart { after: Duration::from_millis(200), crashes: 2 }
    );
    assert_eq!(
        h.record_crash(at(2)),
        RestartDecision::Restart { after: Duration::from_millis(300), crashes: 3 }
    );
    assert_eq!(
        h.record_crash(at(3)),
        RestartDecision::GiveUp { crashes: 4, window: Duration::from_secs(60) }
    );

    // Crashes older than the window are forgotten: the back-off starts over.
    let mut h = CrashHistory::new(policy);
    h.record_crash(at(0));
    h.record_crash(at(10));
    assert_eq!(
        h.record_crash(at(200)),
        RestartDecision::Restart { after: Duration::from_millis(100), crashes: 1 }
    );
}

#[test]
fn default_policy_matches_the_plan() {
    let p = RestartPolicy::default();
    assert_eq!((p.max_crashes, p.window), (3, Duration::from_secs(600)));
}

#[tokio::test]
async fn capped_lines() {
    let input: &[u8] = b"one\r\ntwo-long-line\n\nlast";
    let mut reader = tokio::io::BufReader::with_capacity(3, input);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while let Some(dropped) = read_capped_line(&mut reader, &mut buf, 5).await.unwrap() {
        out.push((String::from_utf8(buf.clone()).unwrap(), dropped));
    }
    assert_eq!(
        out,
        [("one".into(), 0), ("two-l".into(), 8), (String::new(), 0), ("last".into(), 0)]
    );
}
