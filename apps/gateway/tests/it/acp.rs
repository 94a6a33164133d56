//! The `acp_*` methods over the WebSocket against the real `kilo acp` (with the mock LLM):
//! connect, a streamed reply, a permission, a cancel, isolation between connections, and no
//! agent left once the WebSocket closes.

use std::time::Duration;

use bb_kilo::testing::{KiloWorld, kilo_bin};
use bb_test_support::procfs::{children_of, cmdline, is_dead};
use serde_json::{Value, json};

use crate::harness::Gateway;

/// Bound on an agent start plus one turn on a loaded 2-core machine.
const LONG: Duration = Duration::from_secs(120);

async fn wait_gone(pid: u32) {
    for _ in 0..400 {
        if is_dead(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("process {pid} is still alive");
}

/// The next message, waiting up to LONG (an agent's start or turn on a loaded machine can
/// take longer than the harness's per-message wait).
async fn next_long(c: &mut crate::harness::Client) -> Value {
    c.next_within(LONG).await
}

/// Reads until the response to `id` (or takes it from what was already read), collecting
/// everything else.
async fn response(c: &mut crate::harness::Client, id: &str, events: &mut Vec<Value>) -> Value {
    if let Some(at) = events.iter().position(|m| m["type"] == "response" && m["id"] == id) {
        return events.remove(at);
    }
    loop {
        let msg = next_long(c).await;
        if msg["type"] == "response" && msg["id"] == id {
            return msg;
        }
        events.push(msg);
    }
}

/// Reads until an event satisfies `pred`, collecting everything.
async fn event(
    c: &mut crate::harness::Client,
    events: &mut Vec<Value>,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    loop {
        let msg = next_long(c).await;
        events.push(msg.clone());
        if pred(&msg) {
            return msg;
        }
    }
}

/// Sends a request and reads until its response.
async fn call(
    c: &mut crate::harness::Client,
    id: &str,
    method: &str,
    params: Value,
    events: &mut Vec<Value>,
) -> Value {
    c.send(id, method, params).await;
    response(c, id, events).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_methods_drive_kilo_over_the_websocket() {
    let bin = kilo_bin();
    let world = KiloWorld::new();
    let _mock = world.start_mock_llm(Duration::from_millis(50), "ask", "ask");
    // What `acp_connect` names: the agent's HOME/XDG and Kilo switches.
    let env: serde_json::Map<String, Value> =
        world.env().into_iter().map(|(k, v)| (k, Value::String(v))).collect();
    let gw = Gateway::start(&[]);
    let mut a = gw.connect().await;
    let mut b = gw.connect().await;
    let mut ev_a = Vec::new();
    let mut ev_b = Vec::new();

    a.send(
        "c1",
        "acp_connect",
        json!({"command": bin.display().to_string(), "args": ["acp"], "env": env}),
    )
    .await;
    let info = response(&mut a, "c1", &mut ev_a).await;
    assert_eq!(info["ok"], true, "{info}");
    let info = &info["result"];
    assert_eq!(info["status"], "ready");
    assert_eq!(info["protocolVersion"], "1");
    assert_eq!(info["agentInfo"]["name"], "Kilo");
    let conn = info["id"].as_str().unwrap().to_owned();
    let agent = children_of(gw.pid())
        .into_iter()
        .find(|&pid| !is_dead(pid) && cmdline(pid).contains(" acp"))
        .expect("the agent is the gateway's child");

    let new = call(&mut a, "n1", "acp_session_new", json!({"connectionId": conn}), &mut ev_a).await;
    let session = new["result"].as_str().unwrap_or_else(|| panic!("{new}")).to_owned();

    // A streamed reply; the response is the turn's end.
    a.send(
        "p1",
        "acp_session_prompt",
        json!({"connectionId": conn, "sessionId": session,
        "prompt": [{"type": "text", "text": "MOCK:text:hello%20over%20ws"}]}),
    )
    .await;
    let end = response(&mut a, "p1", &mut ev_a).await;
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    let text: String = ev_a
        .iter()
        .filter(|e| {
            e["event"] == "acp-session-update"
                && e["payload"]["update"]["sessionUpdate"] == "agent_message_chunk"
        })
        .filter_map(|e| e["payload"]["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(text, "hello over ws");
    assert!(ev_a.iter().all(|e| e["payload"]["connectionId"] == conn.as_str()));

    // A permission, approved.
    a.send(
        "p2",
        "acp_session_prompt",
        json!({"connectionId": conn, "sessionId": session,
        "prompt": [{"type": "text", "text": "MOCK:bash:echo%20gw81"}]}),
    )
    .await;
    let asked = event(&mut a, &mut ev_a, |e| e["event"] == "acp-permission-request").await;
    let options = asked["payload"]["options"].as_array().unwrap().len();
    assert_eq!(options, 3, "{asked}");
    let reply = call(&mut a, "r1", "acp_permission_reply", json!({"connectionId": conn, "sessionId": session,
        "requestId": asked["payload"]["requestId"], "outcome": {"outcome": "selected", "optionId": "once"}}), &mut ev_a).await;
    assert_eq!(reply["ok"], true, "{reply}");
    let end = response(&mut a, "p2", &mut ev_a).await;
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");

    // Cancel mid-turn.
    a.send(
        "p3",
        "acp_session_prompt",
        json!({"connectionId": conn, "sessionId": session,
        "prompt": [{"type": "text", "text": "MOCK:slow"}]}),
    )
    .await;
    event(&mut a, &mut ev_a, |e| {
        e["payload"]["update"]["sessionUpdate"] == "agent_message_chunk"
            && e["payload"]["update"]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("tick"))
    })
    .await;
    let cancel = a
        .call(
            "x1",
            "acp_session_cancel",
            json!({"connectionId": conn, "sessionId": session}),
            &mut ev_a,
        )
        .await;
    assert_eq!(cancel["ok"], true, "{cancel}");
    let end = response(&mut a, "p3", &mut ev_a).await;
    assert_eq!(end["result"]["stopReason"], "cancelled", "{end}");

    // The other connection saw none of it and cannot use A's agent.
    let foreign =
        call(&mut b, "b1", "acp_session_new", json!({"connectionId": conn}), &mut ev_b).await;
    assert_eq!(foreign["error"]["code"], "acp_connection_not_found", "{foreign}");
    assert!(
        ev_b.iter().all(|e| !e["event"].as_str().unwrap_or_default().starts_with("acp-")),
        "{ev_b:#?}"
    );

    // Closing A's WebSocket stops its agent.
    a.ws.close(None).await.unwrap();
    wait_gone(agent).await;
}
