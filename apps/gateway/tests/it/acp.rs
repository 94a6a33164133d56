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

/// `acp_connect` params for the real `kilo acp` in `world` (its HOME/XDG and Kilo switches).
fn kilo_connect(world: &KiloWorld) -> Value {
    let env: serde_json::Map<String, Value> =
        world.env().into_iter().map(|(k, v)| (k, Value::String(v))).collect();
    json!({"command": kilo_bin().display().to_string(), "args": ["acp"], "env": env})
}

/// `acp_session_new` on `conn`: the new session's id.
async fn new_session(
    c: &mut crate::harness::Client,
    conn: &str,
    events: &mut Vec<Value>,
) -> String {
    let new = call(c, "new", "acp_session_new", json!({"connectionId": conn}), events).await;
    new["result"].as_str().unwrap_or_else(|| panic!("{new}")).to_owned()
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
    let world = KiloWorld::new();
    let _mock = world.start_mock_llm(Duration::from_millis(50), "ask", "ask");
    let gw = Gateway::start(&[]);
    let mut a = gw.connect().await;
    let mut b = gw.connect().await;
    let mut ev_a = Vec::new();
    let mut ev_b = Vec::new();

    let info = call(&mut a, "c1", "acp_connect", kilo_connect(&world), &mut ev_a).await;
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

    let session = new_session(&mut a, &conn, &mut ev_a).await;

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

/// Sends a prompt and collects its events up to the session's `idle` state (which follows
/// every update of the turn; the response may come before the last of them).
async fn turn(c: &mut crate::harness::Client, id: &str, params: Value) -> (Value, Vec<Value>) {
    let session = params["sessionId"].clone();
    let mut events = Vec::new();
    c.send(id, "acp_session_prompt", params).await;
    let end = response(c, id, &mut events).await;
    if !events
        .iter()
        .any(|e| e["payload"]["state"] == "idle" && e["payload"]["sessionId"] == session)
    {
        event(c, &mut events, |e| {
            e["payload"]["state"] == "idle" && e["payload"]["sessionId"] == session
        })
        .await;
    }
    (end, events)
}

/// The `sessionUpdate` of an `acp-session-update` event.
fn update_kind(e: &Value) -> &str {
    e["payload"]["update"]["sessionUpdate"].as_str().unwrap_or_default()
}

/// The `currentValue` of config option `id` in a list of options.
fn current<'a>(options: &'a Value, id: &str) -> &'a Value {
    &options.as_array().unwrap().iter().find(|o| o["id"] == id).unwrap()["currentValue"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_sessions_and_config_options_on_kilo_over_the_websocket() {
    let world = KiloWorld::new();
    let _mock = world.start_mock_llm(Duration::from_millis(50), "ask", "ask");
    let gw = Gateway::start(&[]);
    let mut a = gw.connect().await;
    let mut ev = Vec::new();
    let info = call(&mut a, "c1", "acp_connect", kilo_connect(&world), &mut ev).await;
    let conn = info["result"]["id"].as_str().unwrap_or_else(|| panic!("{info}")).to_owned();
    let session = new_session(&mut a, &conn, &mut ev).await;
    // The new session's config options reach the client as a `config_option_update`.
    let options = event(&mut a, &mut ev, |e| update_kind(e) == "config_option_update").await;
    assert_eq!(current(&options["payload"]["update"]["configOptions"], "model"), "mock/mock-model");

    let prompt = |text: &str| {
        json!({"connectionId": conn, "sessionId": session,
        "prompt": [{"type": "text", "text": text}]})
    };
    let (end, _) = turn(&mut a, "p1", prompt("MOCK:text:one")).await;
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    let set = call(&mut a, "s1", "acp_session_set_config_option",
        json!({"connectionId": conn, "sessionId": session, "configId": "model", "value": "mock/other-model"}), &mut ev).await;
    assert_eq!(current(&set["result"]["configOptions"], "model"), "mock/other-model", "{set}");
    let bad = call(
        &mut a,
        "s2",
        "acp_session_set_config_option",
        json!({"connectionId": conn, "sessionId": session, "configId": "speed", "value": "fast"}),
        &mut ev,
    )
    .await;
    assert_eq!(bad["error"]["code"], "invalid_params", "{bad}");
    let (_, turn_events) = turn(&mut a, "p2", prompt("MOCK:text:two")).await;
    let usage = turn_events.iter().rev().find(|e| update_kind(e) == "usage_update").unwrap();
    assert_eq!(usage["payload"]["update"]["size"], 64000, "the other model's context: {usage}");

    let listed =
        call(&mut a, "l1", "acp_session_list", json!({"connectionId": conn}), &mut ev).await;
    assert!(
        listed["result"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sessionId"] == session.as_str()),
        "{listed}"
    );
    let closed = call(
        &mut a,
        "x1",
        "acp_session_close",
        json!({"connectionId": conn, "sessionId": session}),
        &mut ev,
    )
    .await;
    assert_eq!(closed["ok"], true, "{closed}");
    let gone = call(&mut a, "p3", "acp_session_prompt", prompt("MOCK:text:three"), &mut ev).await;
    assert_eq!(gone["error"]["code"], "acp_agent_error", "Kilo forgot the closed session: {gone}");
    let resumed = call(
        &mut a,
        "r1",
        "acp_session_resume",
        json!({"connectionId": conn, "sessionId": session}),
        &mut ev,
    )
    .await;
    assert_eq!(
        current(&resumed["result"]["configOptions"], "model"),
        "mock/other-model",
        "{resumed}"
    );
    let (end, turn_events) = turn(&mut a, "p4", prompt("MOCK:text:four")).await;
    assert_eq!(end["result"]["stopReason"], "end_turn", "{end}");
    assert!(!turn_events.iter().any(|e| update_kind(e) == "user_message_chunk"), "no replay");
    let del = call(
        &mut a,
        "d1",
        "acp_session_delete",
        json!({"connectionId": conn, "sessionId": session}),
        &mut ev,
    )
    .await;
    assert_eq!(del["error"]["code"], "not_supported", "{del}");
    assert!(del["error"]["message"].as_str().unwrap().contains("session/delete"), "{del}");
    call(&mut a, "z", "acp_disconnect", json!({"id": conn}), &mut ev).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_client_capabilities_over_the_websocket() {
    let script = bb_test_support::repo_root().join("fixtures/acp/capable_agent.py");
    let gw = Gateway::start(&["--trusted"]);
    let root = gw.workspace.path().canonicalize().unwrap();
    let mut a = gw.connect().await;
    let mut ev = Vec::new();
    let info = call(
        &mut a,
        "c1",
        "acp_connect",
        json!({"command": "python3", "args": [script.display().to_string()]}),
        &mut ev,
    )
    .await;
    let conn = info["result"]["id"].as_str().unwrap_or_else(|| panic!("{info}")).to_owned();
    let session = new_session(&mut a, &conn, &mut ev).await;
    let prompt = |text: String| json!({"connectionId": conn, "sessionId": session, "prompt": [{"type": "text", "text": text}]});
    let said = |events: &[Value]| -> String {
        events
            .iter()
            .filter(|e| update_kind(e) == "agent_message_chunk")
            .filter_map(|e| e["payload"]["update"]["content"]["text"].as_str())
            .collect()
    };
    let idle = |e: &Value| e["payload"]["state"] == "idle";

    // A write: the bridge asks through an `acp-permission-request`; approved, it is written.
    let target = root.join("out.txt").display().to_string();
    let mut w = Vec::new();
    a.send("p1", "acp_session_prompt", prompt(format!("FAKE:write:{target}:hi"))).await;
    let asked = event(&mut a, &mut w, |e| e["event"] == "acp-permission-request").await;
    assert_eq!(asked["payload"]["toolCall"]["kind"], "edit", "{asked}");
    let answer = json!({"connectionId": conn, "requestId": asked["payload"]["requestId"],
        "outcome": {"outcome": "selected", "optionId": "allow"}});
    let reply = call(&mut a, "r1", "acp_permission_reply", answer, &mut w).await;
    assert_eq!(reply["ok"], true, "{reply}");
    response(&mut a, "p1", &mut w).await;
    if !w.iter().any(idle) {
        event(&mut a, &mut w, idle).await;
    }
    assert_eq!(said(&w), "write ok");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi");

    // Outside the workspace: refused, and said so.
    let (_, w) = turn(&mut a, "p2", prompt("FAKE:read:/etc/hostname".to_owned())).await;
    assert!(said(&w).contains("outside the workspace"), "{}", said(&w));
    let refused =
        |e: &Value| e["payload"]["state"] == "file_access" && e["payload"]["refused"].is_string();
    assert!(w.iter().any(refused), "{w:#?}");

    // A terminal's output as `acp-terminal-output` events, then its exit.
    let (_, w) = turn(&mut a, "p3", prompt("FAKE:terminal:echo%20ws77".to_owned())).await;
    let out: Vec<&Value> = w.iter().filter(|e| e["event"] == "acp-terminal-output").collect();
    assert_eq!(out[0]["payload"]["output"], "ws77\n", "{out:#?}");
    assert_eq!(out.last().unwrap()["payload"]["exitStatus"]["exitCode"], 0, "{out:#?}");

    // An elicitation, answered.
    let mut w = Vec::new();
    a.send("p4", "acp_session_prompt", prompt("FAKE:elicit".to_owned())).await;
    let asked = event(&mut a, &mut w, |e| e["event"] == "acp-elicitation-request").await;
    assert_eq!(asked["payload"]["elicitation"]["message"], "Who are you?", "{asked}");
    let answer = json!({"connectionId": conn, "requestId": asked["payload"]["requestId"],
        "action": "accept", "content": {"name": "Lin"}});
    let reply = call(&mut a, "e1", "acp_elicitation_reply", answer, &mut w).await;
    assert_eq!(reply["ok"], true, "{reply}");
    response(&mut a, "p4", &mut w).await;
    if !w.iter().any(idle) {
        event(&mut a, &mut w, idle).await;
    }
    assert_eq!(said(&w), r#"elicitation accept {"name": "Lin"}"#);

    // This agent offers delete; a closed session's late update never arrives.
    let mut w = Vec::new();
    let ids = json!({"connectionId": conn, "sessionId": session});
    let closed = call(&mut a, "x1", "acp_session_close", ids.clone(), &mut w).await;
    assert_eq!(closed["ok"], true, "{closed}");
    let deleted = call(&mut a, "d1", "acp_session_delete", ids, &mut w).await;
    assert_eq!(deleted["ok"], true, "{deleted}");
    call(&mut a, "z", "acp_disconnect", json!({"id": conn}), &mut w).await;
    assert!(!w.iter().any(|e| e.to_string().contains("late after close")), "{w:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_runs_kilo_acp_as_its_engine() {
    let bin = kilo_bin();
    let world = KiloWorld::new();
    let _mock = world.start_mock_llm(Duration::from_millis(50), "ask", "ask");
    let mut env = vec![("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())];
    env.extend(world.env());
    let gw = Gateway::start_with(&["--engine", "acp", "--", bin.to_str().unwrap(), "acp"], &env);
    let mut a = gw.connect().await;
    let mut ev = Vec::new();
    let init = call(&mut a, "i", "bb.init", json!({}), &mut ev).await;
    assert_eq!(init["result"]["engine"]["kind"], "acp", "{init}");
    let created = call(&mut a, "c", "bb.createSession", json!({}), &mut ev).await;
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let set = call(&mut a, "m", "bb.command",
        json!({"sessionId": session, "command": "config.set", "args": {"configId": "model", "value": "mock/other-model"}}),
        &mut ev).await;
    assert_eq!(set["ok"], true, "{set}");
    let sent = call(
        &mut a,
        "s",
        "bb.sendMessage",
        json!({"sessionId": session, "text": "MOCK:text:through%20the%20gateway"}),
        &mut ev,
    )
    .await;
    assert_eq!(sent["ok"], true, "{sent}");
    let is_end = |e: &Value| {
        e["event"] == "bb/events"
            && e["payload"]["events"]
                .as_array()
                .is_some_and(|l| l.iter().any(|x| x["type"] == "turn_ended"))
    };
    if !ev.iter().any(is_end) {
        event(&mut a, &mut ev, is_end).await;
    }
    let items: Vec<&Value> = ev
        .iter()
        .filter(|e| e["event"] == "bb/events" && e["payload"]["sessionId"] == session.as_str())
        .flat_map(|e| e["payload"]["events"].as_array().unwrap())
        .collect();
    let text: String = items
        .iter()
        .filter(|e| e["type"] == "agent_message_chunk")
        .filter_map(|e| e["payload"]["content"]["text"].as_str())
        .collect();
    assert_eq!(text, "through the gateway");
    let usage = items.iter().find(|e| e["type"] == "usage_update").unwrap();
    assert_eq!(usage["class"], "session.info");
    assert_eq!(usage["payload"]["size"], 64000, "the turn ran on the picked model: {usage}");
}
