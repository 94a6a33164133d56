//! `bb-sidecar --engine acp -- opencode acp`: the second real agent (opencode 1.18.34, the
//! same mock LLM), offline: a turn, a permission, a model switch through config options, a
//! close and its resume; like Kilo it offers no `session/delete`.

use bb_kilo::testing::{KiloWorld, opencode_bin};
use serde_json::json;

use crate::acp::{Acp, first, last_request_id, text_of};
use crate::harness::{LONG, World};

#[test]
fn opencode_turn_permission_model_switch_close_and_resume() {
    let bin = opencode_bin();
    let world = World::new();
    let mock = world.start_mock_llm("ask", "ask");
    // The bridge passes `KILO_*` through its environment allow-list, not `OPENCODE_*`: the
    // agent command sets opencode's offline switches itself.
    let switches = KiloWorld::opencode_switches();
    let mut agent: Vec<&str> = vec!["env"];
    agent.extend(switches.iter().map(String::as_str));
    agent.extend([bin.to_str().unwrap(), "acp"]);
    let mut a = Acp::with_agent(world, Some(mock), true, &agent);
    let init = a.sidecar.ok("bb.init", json!({}));
    assert_eq!(init["engine"]["version"], "1.18.34", "{init}");

    let s = a.session();
    let events = a.turn(&s, "Say it MOCK:text:hello%20from%20opencode");
    assert_eq!(text_of(&events), "hello from opencode");
    assert_eq!(first(&events, "usage_update")["payload"]["size"], 128000);

    a.send(&s, "Run it MOCK:bash:echo%20otter55");
    let id = last_request_id(&a.sidecar.session_events_until(&s, "request_permission", LONG));
    a.sidecar.ok(
        "bb.approvePermission",
        json!({"sessionId": s, "requestId": id, "decision": "allow_once"}),
    );
    let events = a.sidecar.session_events_until(&s, "turn_ended", LONG);
    assert!(
        events.iter().any(|e| e["type"] == "tool_call_update" && e.to_string().contains("otter55")),
        "{events:#?}"
    );

    let set =
        a.command(&s, "config.set", json!({"configId": "model", "value": "mock/other-model"}));
    assert_eq!(set["ok"], true, "{set}");
    let events = a.turn(&s, "Say it MOCK:text:on%20the%20other");
    assert_eq!(first(&events, "usage_update")["payload"]["size"], 64000);

    let closed = a.command(&s, "session.close", json!({}));
    assert_eq!(closed["result"]["output"]["agentClosed"], true, "{closed}");
    assert_eq!(text_of(&a.turn(&s, "Say it MOCK:text:resumed")), "resumed");
    let del = a.sidecar.call("bb.deleteSession", json!({"sessionId": s}));
    assert_eq!(del["error"]["code"], "not_supported", "{del}");
    a.finish();
}
