//! Two WebSocket connections on one session (two windows, each with its own tab): both get
//! the approval card; the first answer wins; the other window's card resolves with who
//! answered and how (`bb.prompt.closed` with `answeredBy`), and its late answer is refused
//! naming the winner. On the demo (BreadBoard) engine and on the real Kilo server.

use std::time::Duration;

use bb_kilo::testing::{KiloWorld, kilo_bin_or_skip};
use serde_json::{Value, json};

use crate::harness::{Client, Gateway};

/// Bound on the engine's own waits (its start, a first request for a directory).
const LONG: Duration = Duration::from_secs(120);

fn has(e: &Value, pred: impl Fn(&Value) -> bool) -> bool {
    e["event"] == "bb/events"
        && e["payload"]["events"].as_array().is_some_and(|v| v.iter().any(pred))
}

/// The first event in `pool` (events read along with responses) matching `pred`, else the
/// next one `c` reads.
async fn find_or_wait(
    c: &mut Client,
    pool: &mut Vec<Value>,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    if let Some(at) = pool.iter().position(&pred) {
        return pool.remove(at);
    }
    let mut seen = Vec::new();
    c.event_until_within(LONG, &mut seen, pred).await
}

async fn asked(c: &mut Client, pool: &mut Vec<Value>, kind: &str) -> String {
    let batch = find_or_wait(c, pool, |e| has(e, |ev| ev["type"] == kind)).await;
    let events = batch["payload"]["events"].as_array().unwrap();
    let p = &events.iter().find(|ev| ev["type"] == kind).unwrap()["payload"];
    p["request_id"].as_str().or_else(|| p["id"].as_str()).unwrap().to_owned()
}

async fn first_answer_wins(gw: &Gateway, text: &str, asked_kind: &str, turn_end: &str) {
    let mut a = gw.connect().await;
    let mut b = gw.connect().await;
    // What each window read along with its responses.
    let (mut seen, mut seen_b) = (Vec::new(), Vec::new());
    assert_eq!(a.call("i1", "bb.init", json!({}), &mut seen).await["ok"], true);
    assert_eq!(b.call("i2", "bb.init", json!({}), &mut seen_b).await["ok"], true);
    find_or_wait(&mut a, &mut seen, |e| {
        e["event"] == "bb/connection" && e["payload"]["status"] == "connected"
    })
    .await;
    let created = a.call("c1", "bb.createSession", json!({"tabId": "tab-a"}), &mut seen).await;
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let selected = b
        .call(
            "s1",
            "bb.selectSession",
            json!({"sessionId": session, "tabId": "tab-b"}),
            &mut seen_b,
        )
        .await;
    assert_eq!(selected["ok"], true, "{selected}");
    let sent = a
        .call("m1", "bb.sendMessage", json!({"sessionId": session, "text": text}), &mut seen)
        .await;
    assert_eq!(sent["ok"], true, "{sent}");
    let request = asked(&mut a, &mut seen, asked_kind).await;
    assert_eq!(asked(&mut b, &mut seen_b, asked_kind).await, request, "both windows get the card");

    let params = json!({"sessionId": session, "requestId": request, "decision": "allow_once"});
    let won = a.call("p1", "bb.approvePermission", params, &mut seen).await;
    assert_eq!(won["ok"], true, "{won}");
    for (c, pool, tab) in [(&mut a, &mut seen, "tab-a"), (&mut b, &mut seen_b, "tab-b")] {
        let is_it =
            |ev: &Value| ev["type"] == "bb.prompt.closed" && ev["payload"]["requestId"] == request;
        let batch = find_or_wait(c, pool, |e| has(e, is_it)).await;
        assert_eq!(batch["payload"]["tabId"], tab);
        let events = batch["payload"]["events"].as_array().unwrap();
        let item = events.iter().find(|ev| is_it(ev)).unwrap();
        assert_eq!(item["payload"]["decision"], "allow_once", "{item}");
        assert_eq!(item["payload"]["answeredBy"]["tabId"], "tab-a", "{item}");
    }
    let params = json!({"sessionId": session, "requestId": request, "decision": "deny"});
    let late = b.call("p2", "bb.approvePermission", params, &mut seen_b).await;
    assert_eq!(late["ok"], false, "{late}");
    assert_eq!(late["error"]["code"], "permission_not_pending", "{late}");
    let message = late["error"]["message"].as_str().unwrap();
    assert!(message.contains("first answer won: allow_once from tab tab-a"), "{message}");
    for (c, pool) in [(&mut a, &mut seen), (&mut b, &mut seen_b)] {
        find_or_wait(c, pool, |e| has(e, |ev| ev["type"] == turn_end)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_windows_on_the_demo_engine_first_answer_wins() {
    let gw = Gateway::start(&["--trusted"]);
    first_answer_wins(&gw, "go", "permission_request", "run_finished").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_windows_on_real_kilo_first_answer_wins() {
    let Some(kilo) = kilo_bin_or_skip() else { return };
    let world = KiloWorld::new();
    let _mock = world.start_mock_llm(Duration::from_millis(20), "ask", "ask");
    let kilo = kilo.display().to_string();
    let gw = Gateway::start_with(
        &["--trusted", "--engine", "kilo", "--engine-bin", &kilo],
        &world.env(),
    );
    first_answer_wins(
        &gw,
        "Run it MOCK:bash:echo%20shared78",
        "permission.asked",
        "session.turn.close",
    )
    .await;
}
