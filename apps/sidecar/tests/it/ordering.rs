//! Exactly one response per request, in request order, through the binary: requests in flight
//! when stdin closes are answered before the sidecar exits; pipelined requests (bad lines
//! included) are answered in the order sent, and state changes take effect in that order.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{LONG, Sidecar, World, repo_root};

fn demo(world: &World) -> Sidecar {
    let args = ["--engine", "demo", "--state-dir", &world.path("state").display().to_string()];
    Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"))
}

fn req(id: &str, method: &str, params: Value) -> String {
    json!({"v": 1, "kind": "req", "id": id, "method": method, "params": params}).to_string()
}

/// The responses among the lines seen, in order.
fn responses(sidecar: &Sidecar) -> Vec<Value> {
    sidecar
        .seen
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["kind"] == "res")
        .collect()
}

fn ids(responses: &[Value]) -> Vec<&str> {
    responses.iter().map(|r| r["id"].as_str().unwrap()).collect()
}

#[test]
fn requests_in_flight_at_end_of_input_are_answered_before_exit() {
    let world = World::new();
    let mut sidecar = demo(&world);
    // `printf '<init>\n<create>\n' | bb-sidecar`
    sidecar.send_line(&req("init", "bb.init", json!({})));
    sidecar.send_line(&req("create", "bb.createSession", json!({})));
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(LONG).success(), "{}", sidecar.stderr());
    let answered = responses(&sidecar);
    assert_eq!(ids(&answered), ["init", "create"], "{:?}", sidecar.seen);
    assert!(answered.iter().all(|r| r["ok"] == true), "{answered:?}");
}

#[test]
fn requests_waiting_for_a_starting_engine_at_end_of_input_are_answered() {
    let world = World::new();
    let fake = repo_root().join("fixtures/engine/fake_kilo.py");
    let project = world.path("project").display().to_string();
    let args =
        ["--workspace", &project, "--engine", "kilo", "--engine-bin", fake.to_str().unwrap()];
    let mut sidecar = Sidecar::spawn(&args, &world.env(), world.path("sidecar.err"));
    sidecar.send_line(&req("init", "bb.init", json!({})));
    sidecar.send_line(&req("list", "bb.listSessions", json!({})));
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(LONG).success(), "{}", sidecar.stderr());
    let answered = responses(&sidecar);
    assert_eq!(ids(&answered), ["init", "list"], "{:?}", sidecar.seen);
    assert_eq!(answered[1]["ok"], true, "held until the engine was up: {}", answered[1]);
}

#[test]
fn pipelined_requests_are_answered_in_order_and_take_effect_in_order() {
    let world = World::new();
    let mut sidecar = demo(&world);
    let lines = [
        req("a", "bb.init", json!({})),
        req("b", "bb.init", json!({})),
        req("c", "bb.createSession", json!({})),
        r#"{"v":1,"kind":"req","id":"x","method":"bb.nope"}"#.to_owned(),
        req("d", "bb.listSessions", json!({})),
        req("e", "bb.createSession", json!({})),
        req("f", "bb.listSessions", json!({})),
    ];
    for line in &lines {
        sidecar.send_line(line);
    }
    let f = sidecar.response("f", LONG);
    sidecar.close_stdin();
    assert!(sidecar.wait_exit(Duration::from_secs(60)).success(), "{}", sidecar.stderr());
    let answered = responses(&sidecar);
    assert_eq!(ids(&answered), ["a", "b", "c", "x", "d", "e", "f"], "{:?}", sidecar.seen);
    assert_eq!(answered[3]["error"]["code"], "unknown_method");
    let created: Vec<&str> = [&answered[2], &answered[5]]
        .iter()
        .map(|r| r["result"]["sessionId"].as_str().unwrap())
        .collect();
    let listed = |r: &Value| -> Vec<String> {
        r["result"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_owned())
            .collect()
    };
    // Each list sees exactly the sessions created before it was sent.
    let d = listed(&answered[4]);
    assert!(d.iter().any(|s| s == created[0]) && !d.iter().any(|s| s == created[1]), "{d:?}");
    let f = listed(&f);
    assert!(created.iter().all(|c| f.iter().any(|s| s == c)), "{f:?}");
}
