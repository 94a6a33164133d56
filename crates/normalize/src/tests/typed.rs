//! The reducers' typed reads find what the tree lookups they replaced found: each replaced
//! lookup is kept here as the oracle, checked on a table of odd shapes and on generated
//! payloads, each payload reduced as text and as a tree.

use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::event::{Engine, Payload, RawEvent};
use crate::json::{as_text, at, bool_at, id_at, str_at, string_at};
use crate::redact::{redact_log_line, redacted};
use crate::reduce::{ApprovalState, Block, RunSummary, SessionView, StreamStatus, ToolStatus};

/// The cap of a card's line (the transcript's `LINE_CAP`).
fn one_line(s: &str) -> String {
    redact_log_line(s, 2048)
}

/// The payload as its text and as its tree: the tree is what the replaced lookups read.
fn forms(json: &str) -> (Value, [Payload; 2]) {
    let tree: Value = serde_json::from_str(json).unwrap();
    let text = Payload::from_text(RawValue::from_string(json.to_owned()).unwrap());
    (tree.clone(), [text, Payload::from(tree)])
}

/// The view after one event.
fn reduced(engine: Engine, kind: &str, payload: Payload) -> SessionView {
    let mut v = SessionView::new();
    v.apply_event(RawEvent::new(engine, kind.to_owned(), payload));
    v
}

// ---- the replaced lookups -------------------------------------------------------------

fn turn_looked_up(p: &Value) -> Option<i64> {
    p.get("turn").and_then(Value::as_i64)
}

fn finish_looked_up(p: &Value) -> RunSummary {
    RunSummary {
        turn_index: 0,
        completed: bool_at(p, &["summary", "completed"]).or_else(|| bool_at(p, &["completed"])),
        reason: string_at(p, &[&["summary", "reason"], &["reason"]]),
        steps: at(p, &["summary", "steps_taken"])
            .or_else(|| at(p, &["steps"]))
            .and_then(Value::as_u64),
        logging_dir: string_at(p, &[&["logging_dir"]]),
        usage: p.get("usage").filter(|u| u.is_object()).map(redacted),
        event_id: None,
        outcome: None,
    }
}

fn user_looked_up(p: &Value) -> (Option<String>, Option<String>) {
    let id = string_at(p, &[&["info", "id"], &["message_id"], &["id"]]);
    (id, string_at(p, &[&["text"]]))
}

/// A tool part's call id, tool, title, input, output, error and failure.
type ToolFound = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    bool,
);

fn tool_part_looked_up(part: &Value) -> ToolFound {
    let state = part.get("state").unwrap_or(&Value::Null);
    let status = str_at(state, &[&["status"]]);
    let failed = status == Some("error");
    let output = if status == Some("completed") {
        state.get("output").and_then(as_text)
    } else {
        at(state, &["metadata", "output"]).and_then(as_text)
    };
    let input = state
        .get("input")
        .filter(|v| v.as_object().is_none_or(|o| !o.is_empty()))
        .and_then(as_text);
    let error = if failed { str_at(state, &[&["error"]]).map(one_line) } else { None };
    (
        string_at(part, &[&["callID"], &["id"]]),
        string_at(part, &[&["tool"]]),
        string_at(state, &[&["title"]]),
        input,
        output,
        error,
        failed,
    )
}

fn message_error_looked_up(p: &Value) -> Option<String> {
    let e = p.get("info").and_then(|i| i.get("error")).filter(|e| !e.is_null())?;
    let msg = str_at(e, &[&["data", "message"], &["message"], &["name"]])
        .map_or_else(|| e.to_string(), str::to_owned);
    Some(one_line(&msg))
}

fn notice_looked_up(p: &Value) -> String {
    let msg = str_at(
        p,
        &[
            &["message"],
            &["reason"],
            &["error", "data", "message"],
            &["error", "message"],
            &["error", "name"],
            &["error"],
        ],
    );
    one_line(msg.unwrap_or("error"))
}

/// A request's id, tool, summary, patterns and call id.
type AskFound = (Option<String>, Option<String>, Option<String>, Vec<String>, Option<String>);

fn ask_looked_up(p: &Value) -> AskFound {
    let request_id = id_at(p, &[&["request_id"], &["id"], &["requestID"], &["requestId"]]);
    let tool = string_at(
        p,
        &[&["permission"], &["tool"], &["tool", "name"], &["category"], &["toolCall", "kind"]],
    );
    let summary = str_at(
        p,
        &[
            &["summary"],
            &["metadata", "command"],
            &["metadata", "filepath"],
            &["title"],
            &["toolCall", "title"],
        ],
    )
    .map(str::to_owned)
    .or_else(|| {
        p.get("questions")
            .and_then(Value::as_array)
            .and_then(|q| q.first())
            .and_then(|q| str_at(q, &[&["question"], &["header"]]))
            .map(str::to_owned)
    })
    .map(|s| one_line(&s));
    let patterns = p
        .get("patterns")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(one_line).collect())
        .unwrap_or_default();
    let call_id = string_at(p, &[&["tool", "callID"], &["call_id"]]);
    (request_id, tool, summary, patterns, call_id)
}

fn reply_looked_up(p: &Value) -> (Option<String>, String) {
    let request_id = id_at(p, &[&["request_id"], &["requestID"], &["id"], &["requestId"]]);
    let decision = str_at(
        p,
        &[
            &["decision"],
            &["reply"],
            &["response"],
            &["outcome", "optionId"],
            &["outcome", "outcome"],
        ],
    )
    .map_or_else(|| "unknown".to_owned(), one_line);
    (request_id, decision)
}

// ---- what the view shows ----------------------------------------------------------------

fn turn_read(p: Payload) -> Option<i64> {
    reduced(Engine::Kilo, "session.turn.open", p).run.turn
}

fn finish_read(p: Payload) -> RunSummary {
    let mut s = reduced(Engine::Kilo, "session.idle", p).run.summary.unwrap();
    s.event_id = None;
    s.outcome = None;
    s
}

fn user_read(p: Payload) -> (Option<String>, Option<String>) {
    let t = reduced(Engine::BreadBoard, "user_message", p).transcript;
    match t.blocks.first() {
        Some(Block::User(b)) => {
            let text = t.text_at(b.text.as_ref().map(|p| p.text)).map(str::to_owned);
            (t.text_at(b.message_id).map(str::to_owned), text)
        }
        other => panic!("{other:?}"),
    }
}

fn tool_part_read(p: Payload) -> ToolFound {
    match reduced(Engine::BreadBoard, "tool_result", p).transcript.blocks.first() {
        Some(Block::Tool(b)) => (
            b.call_id.clone(),
            b.tool.clone(),
            b.title.clone(),
            b.input.as_ref().map(|i| i.text.clone()),
            b.output.as_ref().map(|o| o.text.clone()),
            b.error.clone(),
            b.status == ToolStatus::Error,
        ),
        other => panic!("{other:?}"),
    }
}

/// A call's block shows no error: what a call says of the part is the rest.
fn tool_call_read(p: Payload) -> ToolFound {
    match reduced(Engine::BreadBoard, "tool_call", p).transcript.blocks.first() {
        Some(Block::Tool(b)) => (
            b.call_id.clone(),
            b.tool.clone(),
            b.title.clone(),
            b.input.as_ref().map(|i| i.text.clone()),
            b.output.as_ref().map(|o| o.text.clone()),
            None,
            false,
        ),
        other => panic!("{other:?}"),
    }
}

fn message_error_read(p: Payload) -> Option<String> {
    match reduced(Engine::Kilo, "message.updated", p).transcript.blocks.first() {
        Some(Block::Assistant(b)) => {
            assert_eq!(b.error.is_some(), b.status == StreamStatus::Error);
            b.error.clone()
        }
        other => panic!("{other:?}"),
    }
}

fn notice_read(p: Payload) -> String {
    match reduced(Engine::Kilo, "session.error", p).transcript.blocks.first() {
        Some(Block::Notice(n)) => n.message.clone(),
        other => panic!("{other:?}"),
    }
}

fn ask_read(p: Payload) -> AskFound {
    match reduced(Engine::Kilo, "permission.asked", p).transcript.blocks.first() {
        Some(Block::Approval(a)) => (
            a.request_id.clone(),
            a.tool.clone(),
            a.summary.clone(),
            a.patterns.clone(),
            a.call_id.clone(),
        ),
        other => panic!("{other:?}"),
    }
}

fn reply_read(p: Payload) -> (Option<String>, String) {
    match reduced(Engine::Kilo, "permission.replied", p).transcript.blocks.first() {
        Some(Block::Approval(a)) => match &a.state {
            ApprovalState::Resolved { decision } => (a.request_id.clone(), decision.clone()),
            ApprovalState::Pending => panic!("a reply resolves"),
        },
        other => panic!("{other:?}"),
    }
}

/// Every read of `json`, as text and as a tree, against its replaced lookup.
fn check(json: &str) {
    let (tree, [text, as_tree]) = forms(json);
    for p in [text, as_tree] {
        let form = if p.text().is_some() { "text" } else { "tree" };
        assert_eq!(turn_read(p.clone()), turn_looked_up(&tree), "turn of {json} as {form}");
        assert_eq!(finish_read(p.clone()), finish_looked_up(&tree), "finish {json} as {form}");
        assert_eq!(user_read(p.clone()), user_looked_up(&tree), "user {json} as {form}");
        assert_eq!(notice_read(p.clone()), notice_looked_up(&tree), "notice {json} as {form}");
        assert_eq!(ask_read(p.clone()), ask_looked_up(&tree), "ask {json} as {form}");
        assert_eq!(reply_read(p.clone()), reply_looked_up(&tree), "reply {json} as {form}");
        if let Some(part) = tree.get("part") {
            let found = tool_part_looked_up(part);
            assert_eq!(tool_part_read(p.clone()), found, "result {json} as {form}");
            let call = (found.0, found.1, found.2, found.3, found.4, None, false);
            assert_eq!(tool_call_read(p.clone()), call, "call {json} as {form}");
        }
        if tree
            .get("info")
            .and_then(|i| i.get("id"))
            .and_then(Value::as_str)
            .is_some_and(|i| !i.is_empty())
        {
            assert_eq!(message_error_read(p), message_error_looked_up(&tree), "{json} as {form}");
        }
    }
}

#[test]
fn typed_reads_find_what_the_lookups_found() {
    for json in [
        // Turns: `as_i64` takes an integer up to i64::MAX, no float, no string.
        r#"{"turn":3}"#,
        r#"{"turn":-2}"#,
        r#"{"turn":9223372036854775807}"#,
        r#"{"turn":9223372036854775808}"#,
        r#"{"turn":2.0}"#,
        r#"{"turn":"4"}"#,
        r#"{"turn":null}"#,
        // Finishes: `summary.steps_taken` when present, whatever it is (even null), else
        // `steps`; a `summary` that is no object is not looked in.
        r#"{"summary":{"steps_taken":4,"completed":true,"reason":"done"},"steps":9}"#,
        r#"{"summary":{"steps_taken":null},"steps":9}"#,
        r#"{"summary":{"steps_taken":"4"},"steps":9}"#,
        r#"{"summary":{"steps_taken":-1},"steps":9}"#,
        r#"{"summary":{"steps_taken":4.0},"steps":9}"#,
        r#"{"summary":{},"steps":9,"completed":false,"reason":"r"}"#,
        r#"{"summary":[1],"steps":1e2,"completed":1,"reason":""}"#,
        r#"{"summary":"s","steps":18446744073709551615}"#,
        r#"{"summary":{"completed":"yes","reason":""},"completed":true,"reason":"outer"}"#,
        r#"{"summary":{"completed":null,"reason":7},"completed":null,"reason":"outer"}"#,
        r#"{"summary":{"completed":false},"completed":true}"#,
        r#"{"logging_dir":"","usage":{"latency_ms":3,"token":"sk-AbCdEf0123456789AbCdEf","n":[1e2,-0]}}"#,
        r#"{"logging_dir":"/l","usage":"not an object"}"#,
        r#"{"usage":null,"logging_dir":{"d":1}}"#,
        r#"{"usage":{"a":1,"a":2}}"#,
        // Duplicate keys: the tree keeps the last; the typed read falls back to it.
        r#"{"reason":"first","reason":"last","steps":1,"steps":2}"#,
        // User messages: `info.id`, else `message_id`, else `id`; empty strings skipped.
        r#"{"info":{"id":"m1"},"message_id":"m2","id":"m3","text":"hi"}"#,
        r#"{"info":{"id":""},"message_id":"","id":"m3","text":""}"#,
        r#"{"info":"m1","message_id":1,"id":"m3","text":["a"]}"#,
        r#"{"info":{"id":7},"text":"line\nbreak \u00e9"}"#,
        // Tool parts: any `part` makes it a Kilo part, even one that is no object.
        r#"{"part":null}"#,
        r#"{"part":"p","call_id":"c"}"#,
        r#"{"part":{"callID":"","id":"prt","tool":"bash","state":{"status":"completed","input":{},"output":"o","metadata":{"output":"m"},"title":"t"}}}"#,
        r#"{"part":{"callID":"c","state":{"status":"running","input":{"b":1,"a":[1e2,true]},"output":"o","metadata":{"output":["x","y"]}}}}"#,
        r#"{"part":{"callID":"c","state":{"status":"running","input":"cmd","metadata":{"output":["x",1]}}}}"#,
        r#"{"part":{"callID":"c","state":{"status":"error","error":"bad\nthing","input":null,"output":{"o":null}}}}"#,
        r#"{"part":{"callID":"c","state":{"status":"error","error":5,"input":3,"metadata":"m"}}}"#,
        r#"{"part":{"callID":"c","state":{"status":"completed","output":2.5,"input":[]}}}"#,
        r#"{"part":{"callID":"c","state":{"status":"completed","output":false,"input":{"k":{"k":1,"k":2}}}}}"#,
        r#"{"part":{"callID":"c","state":"running"}}"#,
        r#"{"part":[{"callID":"c"}]}"#,
        // Message errors: the error's message, else the error whole as JSON.
        r#"{"info":{"id":"m","error":{"name":"E","data":{"message":"Aborted"}}}}"#,
        r#"{"info":{"id":"m","error":{"name":"E","data":{"message":""},"message":"m2"}}}"#,
        r#"{"info":{"id":"m","error":{"name":"","data":"d","message":3}}}"#,
        r#"{"info":{"id":"m","error":"plain"}}"#,
        r#"{"info":{"id":"m","error":1e2}}"#,
        r#"{"info":{"id":"m","error":{"k":[1,2]}}}"#,
        r#"{"info":{"id":"m","error":null}}"#,
        // Notices: `message`, `reason`, the error's message, the error as a string.
        r#"{"message":"","reason":"","error":"as string"}"#,
        r#"{"message":1,"reason":"r","error":"e"}"#,
        r#"{"error":{"data":{"message":"d"},"message":"m","name":"n"}}"#,
        r#"{"error":{"message":"","name":"n"}}"#,
        r#"{"error":["x"]}"#,
        // Requests and replies: ids are non-empty strings or numbers (as the tree writes
        // them), taken in each lookup's order.
        r#"{"request_id":"","id":7,"requestID":"r","requestId":"q"}"#,
        r#"{"request_id":1e2,"requestID":"r"}"#,
        r#"{"request_id":null,"id":{"x":1},"requestID":-3,"requestId":"q"}"#,
        r#"{"requestId":0.5,"permission":"","tool":"bash","category":"c"}"#,
        r#"{"tool":{"name":"n","callID":"c"},"call_id":"c2","toolCall":{"kind":"k","title":"t"}}"#,
        r#"{"tool":{"name":"","callID":""},"call_id":"c2","category":"","toolCall":{"kind":"k"}}"#,
        r#"{"summary":"","metadata":{"command":"","filepath":"f"},"title":"t"}"#,
        r#"{"metadata":"m","questions":[{"question":"","header":"h"},{"question":"q2"}]}"#,
        r#"{"questions":["q",{"question":"q2"}]}"#,
        r#"{"questions":{"question":"q"},"patterns":["a","",1,null,"b\nc"]}"#,
        r#"{"patterns":"a"}"#,
        r#"{"decision":"","reply":"once","response":"r"}"#,
        r#"{"outcome":{"optionId":"","outcome":"cancelled"}}"#,
        r#"{"outcome":{"optionId":"allow"},"reply":3}"#,
        r#"{"outcome":"o"}"#,
        r#"{}"#,
    ] {
        check(json);
    }
}

#[test]
fn an_exec_id_of_a_call_joins_its_output_whatever_its_form() {
    for (exec, output_id) in [(r#""x1""#, "x1"), ("7", "7"), ("1e2", "100.0"), ("-0", "-0.0")] {
        let call = format!(r#"{{"call_id":"c1","tool":"shell","exec_id":{exec}}}"#);
        let (_, forms) = forms(&call);
        for p in forms {
            let mut v = SessionView::new();
            v.apply_event(RawEvent::new(Engine::BreadBoard, "tool.exec.start", p));
            let delta = json!({"exec_id": output_id, "delta": "out"});
            v.apply_event(RawEvent::new(Engine::BreadBoard, "tool.exec.stdout.delta", delta));
            assert_eq!(v.transcript.blocks.len(), 1, "{call}: {:?}", v.transcript.blocks);
        }
    }
}

/// A value of any shape the lookups tell apart.
fn odd() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![Just(0i64), Just(-1), Just(7), Just(i64::MIN), Just(i64::MAX)]
            .prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        prop_oneof![Just(2.5f64), Just(100.0), Just(-0.0)].prop_map(Value::from),
        prop_oneof![Just(""), Just("s"), Just("a\nb"), Just("completed"), Just("error")]
            .prop_map(Value::from),
        Just(json!([])),
        Just(json!(["x", "y"])),
        Just(json!(["x", 1])),
        Just(json!({})),
        Just(json!({"k": 1})),
    ]
}

/// An object with some of `fields` (each of its own shape, or of any), or any value.
fn obj(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    let fields: Vec<_> = fields
        .into_iter()
        .map(|(k, s)| prop::option::of(prop_oneof![1 => odd(), 3 => s]).prop_map(move |v| (k, v)))
        .collect();
    let object = fields.prop_map(|kvs| {
        Value::Object(kvs.into_iter().filter_map(|(k, v)| Some((k.to_owned(), v?))).collect())
    });
    prop_oneof![1 => odd(), 6 => object].boxed()
}

fn shape() -> BoxedStrategy<Value> {
    odd().boxed()
}

/// Payloads with the fields every replaced lookup reads, in all their shapes.
fn payload() -> impl Strategy<Value = Value> {
    let error = || {
        obj(vec![
            ("data", obj(vec![("message", shape())])),
            ("message", shape()),
            ("name", shape()),
        ])
    };
    let state = obj(vec![
        ("status", shape()),
        ("title", shape()),
        ("error", shape()),
        ("input", shape()),
        ("output", shape()),
        ("metadata", obj(vec![("output", shape())])),
    ]);
    obj(vec![
        ("turn", shape()),
        (
            "summary",
            obj(vec![("completed", shape()), ("reason", shape()), ("steps_taken", shape())]),
        ),
        ("completed", shape()),
        ("reason", shape()),
        ("steps", shape()),
        ("logging_dir", shape()),
        ("usage", shape()),
        ("info", obj(vec![("id", shape()), ("error", error())])),
        ("message_id", shape()),
        ("id", shape()),
        ("text", shape()),
        (
            "part",
            obj(vec![("callID", shape()), ("id", shape()), ("tool", shape()), ("state", state)]),
        ),
        ("message", shape()),
        ("error", error()),
        ("request_id", shape()),
        ("requestID", shape()),
        ("requestId", shape()),
        ("permission", shape()),
        ("tool", obj(vec![("name", shape()), ("callID", shape())])),
        ("category", shape()),
        ("toolCall", obj(vec![("kind", shape()), ("title", shape())])),
        ("metadata", obj(vec![("command", shape()), ("filepath", shape())])),
        ("title", shape()),
        (
            "questions",
            prop::collection::vec(obj(vec![("question", shape()), ("header", shape())]), 0..3)
                .prop_map(Value::from)
                .boxed(),
        ),
        ("patterns", shape()),
        ("call_id", shape()),
        ("decision", shape()),
        ("reply", shape()),
        ("response", shape()),
        ("outcome", obj(vec![("optionId", shape()), ("outcome", shape())])),
    ])
}

proptest! {
    #[test]
    fn typed_reads_find_what_the_lookups_found_on_any_shapes(v in payload()) {
        check(&v.to_string());
    }
}
