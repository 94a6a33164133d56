//! Tool blocks: opened by calls, fed by streamed output, closed by results; matching by
//! call id, tool name and turn across both engines' shapes.

use bb_payload::{LooseObj, LooseStrOrNum, Present};
use bb_protocol::v1::ToolView;
use serde::Deserialize;
use serde_json::Value;

use super::super::blocks::{Block, ToolBlock, ToolStatus};
use super::{Transcript, one_line, view};
use crate::event::{Engine, RawEvent};
use crate::json::{as_text, at, bool_at, id_at, str_at, string_at};
use crate::kilo;
use crate::truncate::{BodyStore, Limits, truncate};

impl Transcript {
    fn find_open_tool(&self, call_id: Option<&str>, tool: Option<&str>) -> Option<usize> {
        if let Some(&i) = call_id.and_then(|c| self.idx.tools.get(c)) {
            return Some(i);
        }
        let open = |i: &&usize| matches!(self.blocks.get(**i), Some(Block::Tool(b)) if b.status == ToolStatus::Running);
        let by_name = self.idx.open_tools.iter().filter(open).find(|&&i| {
            matches!(self.blocks.get(i), Some(Block::Tool(b)) if tool.is_some() && b.tool.as_deref() == tool && (call_id.is_none() || b.call_id.is_none()))
        });
        by_name.or_else(|| {
            self.idx.open_tools.iter().filter(open).find(|&&i| {
                call_id.is_none() && matches!(self.blocks.get(i), Some(Block::Tool(b)) if b.call_id.is_none() && tool.is_none())
            })
        }).copied()
    }

    fn open_tool(
        &mut self,
        call_id: Option<String>,
        tool: Option<String>,
        turn: Option<i64>,
    ) -> usize {
        let cid = call_id.clone();
        let prompt_id = self.idx.prompt.clone();
        let i = self.push(|block_id| {
            Block::Tool(Box::new(ToolBlock {
                block_id,
                call_id: cid,
                tool,
                turn,
                status: ToolStatus::Running,
                title: None,
                summary: None,
                input: None,
                output: None,
                error: None,
                artifact: None,
                view: None,
                exit_code: None,
                prompt_id,
                live: String::new(),
            }))
        });
        if let Some(c) = call_id {
            self.idx.tools.insert(c, i);
        }
        self.idx.open_tools.push(i);
        i
    }

    fn tool_mut(&mut self, i: usize) -> Option<&mut ToolBlock> {
        match self.block_mut(i) {
            Some(Block::Tool(b)) => Some(b),
            _ => None,
        }
    }

    fn close_tool(&mut self, i: usize) {
        self.idx.open_tools.retain(|&j| j != i);
    }

    /// `tool.call`: opens a running tool block (or updates the open one with the same id).
    pub(crate) fn tool_call(&mut self, ev: &RawEvent, bodies: &mut BodyStore) {
        let head: ToolHead<'_> = ev.payload.read();
        let call = ToolFacts::call(ev, &head, bodies);
        let i = match call.call_id.as_deref().and_then(|c| self.idx.tools.get(c)) {
            Some(&i) => i,
            None => self.open_tool(call.call_id.clone(), call.tool.clone(), ev.turn),
        };
        // `tool.exec.*` deltas name only the exec id: make it an alias of the call.
        if let Some(exec) = kilo::id(&head.exec_id) {
            self.idx.tools.entry(exec).or_insert(i);
        }
        if let Some(b) = self.tool_mut(i) {
            if b.tool.is_none() {
                b.tool = call.tool;
            }
            if call.title.is_some() {
                b.title = call.title;
            }
            if let Some(input) = call.input {
                b.input = Some(bodies.preview(&input, Limits::default()));
            }
            if let Some(out) = call.output {
                b.output = Some(truncate(&out, Limits::default(), None));
            }
            if call.view.is_some() {
                b.view = call.view;
            }
            if call.exit_code.is_some() {
                b.exit_code = call.exit_code;
            }
        }
    }

    /// `tool.output`: streamed stdout/stderr of a running call.
    pub(crate) fn tool_output(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        // BreadBoard `tool.exec.*.delta`; ACP `terminal_output` (the call, else the terminal).
        let call_id = id_at(p, &[&["call_id"], &["exec_id"], &["toolCallId"], &["terminalId"]]);
        let delta = str_at(p, &[&["delta"], &["output"]]).unwrap_or_default();
        let i = match self.find_open_tool(call_id.as_deref(), None) {
            Some(i) => i,
            None => self.open_tool(call_id, None, ev.turn),
        };
        if let Some(b) = self.tool_mut(i) {
            b.live.push_str(delta);
            b.output = Some(truncate(&b.live, Limits::default(), None));
        }
    }

    /// `tool.result`: closes the matching tool block and attaches a compact preview. A result
    /// without an open match refreshes the latest block of the same call or tool in the same
    /// turn (BreadBoard emits two results per call), or else opens a closed block.
    /// Returns the block, once closed, when its call succeeded.
    pub(crate) fn tool_result(
        &mut self,
        ev: &RawEvent,
        bodies: &mut BodyStore,
    ) -> Option<&ToolBlock> {
        let head: ToolHead<'_> = ev.payload.read();
        let r = ToolFacts::result(ev, &head, bodies);
        let i = self.find_open_tool(r.call_id.as_deref(), r.tool.as_deref()).or_else(|| {
            self.blocks.iter().rposition(|b| {
                matches!(b, Block::Tool(t) if t.turn == ev.turn
                    && ((r.call_id.is_some() && t.call_id == r.call_id)
                        || (r.call_id.is_none() && r.tool.is_some() && t.tool == r.tool)))
            })
        });
        let i = match i {
            Some(i) => i,
            None => self.open_tool(r.call_id.clone(), r.tool.clone(), ev.turn),
        };
        self.close_tool(i);
        let output = r.output.as_deref().map(|o| bodies.preview(o, Limits::default()));
        if let Some(b) = self.tool_mut(i) {
            if b.tool.is_none() {
                b.tool = r.tool;
            }
            if b.status != ToolStatus::Error {
                b.status = if r.failed { ToolStatus::Error } else { ToolStatus::Completed };
            }
            if r.title.is_some() {
                b.title = r.title;
            }
            if r.summary.is_some() {
                b.summary = r.summary;
            }
            if r.error.is_some() {
                b.error = r.error;
            }
            if r.artifact.is_some() {
                b.artifact = r.artifact;
            }
            if let Some(input) = r.input {
                b.input = Some(bodies.preview(&input, Limits::default()));
            }
            if r.view.is_some() {
                b.view = r.view;
            }
            if r.exit_code.is_some() {
                b.exit_code = r.exit_code;
            }
            // The streamed buffer goes with the call (its capacity too).
            let live = std::mem::take(&mut b.live);
            if output.is_some() {
                b.output = output;
            } else if !live.is_empty() {
                // A streamed output is stored whole once the call ends.
                b.output = Some(bodies.preview(&live, Limits::default()));
            }
        }
        match self.blocks.get(i) {
            Some(Block::Tool(b)) if b.status == ToolStatus::Completed => Some(b),
            _ => None,
        }
    }
}

/// What a tool event's payload says, read typed: the Kilo part (present with any value:
/// then it is a Kilo tool event) and the exec id (BreadBoard's alias of a call).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolHead<'a> {
    #[serde(borrow)]
    part: Present<LooseObj<kilo::ToolPart<'a>>>,
    #[serde(borrow)]
    exec_id: LooseStrOrNum<'a>,
}

/// What a tool call or result says, whichever engine shape it has.
#[derive(Debug, Default)]
struct ToolFacts {
    call_id: Option<String>,
    tool: Option<String>,
    title: Option<String>,
    summary: Option<String>,
    input: Option<String>,
    output: Option<String>,
    error: Option<String>,
    artifact: Option<Box<Value>>,
    view: Option<Box<ToolView<'static>>>,
    exit_code: Option<i64>,
    failed: bool,
}

impl ToolFacts {
    fn call(ev: &RawEvent, head: &ToolHead<'_>, bodies: &mut BodyStore) -> Self {
        let p = &ev.payload;
        if ev.engine == Engine::Acp {
            return Self::acp(p, bodies);
        }
        if let Some(part) = &head.part.0 {
            return Self::kilo(part.get(), bodies);
        }
        Self::with_view(
            p,
            bodies,
            Self {
                call_id: id_at(p, &[&["call_id"], &["call", "id"], &["exec_id"]]),
                tool: string_at(
                    p,
                    &[
                        &["tool"],
                        &["tool", "name"],
                        &["call", "function", "name"],
                        &["call", "name"],
                        &["tool_name"],
                    ],
                ),
                title: string_at(p, &[&["display", "title"]]),
                input: at(p, &["call", "function", "arguments"])
                    .or_else(|| at(p, &["call", "arguments"]))
                    .or_else(|| at(p, &["tool", "args"]))
                    .or_else(|| at(p, &["command"]))
                    .and_then(as_text),
                ..Self::default()
            },
        )
    }

    /// A BreadBoard call or result with its readable view.
    fn with_view(p: &Value, bodies: &mut BodyStore, mut facts: Self) -> Self {
        let (view, exit) = view::breadboard(p, facts.tool.as_deref(), bodies);
        facts.view = view.map(Box::new);
        facts.exit_code = exit;
        facts
    }

    fn result(ev: &RawEvent, head: &ToolHead<'_>, bodies: &mut BodyStore) -> Self {
        let p = &ev.payload;
        if ev.engine == Engine::Acp {
            return Self::acp(p, bodies);
        }
        if let Some(part) = &head.part.0 {
            return Self::kilo(part.get(), bodies);
        }
        let failed = bool_at(p, &["error"]) == Some(true)
            || bool_at(p, &["success"]) == Some(false)
            || bool_at(p, &["result", "ok"]) == Some(false)
            || matches!(
                str_at(p, &[&["status"], &["tool", "status"]]),
                Some("error" | "failed" | "failure")
            )
            || p.get("exit_code").and_then(Value::as_i64).is_some_and(|c| c != 0);
        let output = at(p, &["display", "detail"])
            .or_else(|| at(p, &["tool", "output"]))
            .or_else(|| at(p, &["message", "content"]))
            .or_else(|| at(p, &["result"]))
            .and_then(as_text);
        let error = if failed {
            str_at(p, &[&["result", "error"], &["error_message"], &["message"]]).map(one_line)
        } else {
            None
        };
        Self::with_view(
            p,
            bodies,
            Self {
                call_id: id_at(p, &[&["call_id"], &["result", "id"], &["exec_id"]]),
                tool: string_at(
                    p,
                    &[
                        &["tool"],
                        &["tool", "name"],
                        &["message", "name"],
                        &["result", "name"],
                        &["tool_name"],
                    ],
                ),
                title: string_at(p, &[&["display", "title"]]),
                summary: str_at(p, &[&["display", "summary"], &["result", "summary"]])
                    .map(one_line),
                artifact: at(p, &["display", "detail_artifact"])
                    .or_else(|| p.get("artifact_ref"))
                    .filter(|a| a.is_object())
                    .map(|a| Box::new(crate::redact::redacted(a))),
                input: None,
                output,
                error,
                view: None,
                exit_code: None,
                failed,
            },
        )
    }

    fn acp(p: &Value, bodies: &mut BodyStore) -> Self {
        let t = super::acp::acp_tool(p);
        let error = if t.failed { t.output.as_deref().map(one_line) } else { None };
        Self {
            call_id: t.call_id,
            tool: t.kind,
            title: t.title,
            input: t.input,
            output: t.output,
            error,
            failed: t.failed,
            view: view::acp(p, bodies).map(Box::new),
            ..Self::default()
        }
    }

    /// A Kilo tool part (nothing of one that is not an object).
    fn kilo(part: Option<&kilo::ToolPart<'_>>, bodies: &mut BodyStore) -> Self {
        let Some(part) = part else { return Self::default() };
        let state = part.state.get();
        let status = state.and_then(|s| kilo::non_empty(&s.status));
        let failed = status == Some("error");
        let output = state.and_then(|s| {
            if status == Some("completed") {
                s.output.as_text()
            } else {
                s.metadata.get().and_then(|m| m.output.as_text())
            }
        });
        let metadata = state.and_then(|s| s.metadata.get());
        let input = state.and_then(|s| match &s.input {
            crate::json::Shown::Tree(v) => Some(v),
            _ => None,
        });
        let (view, exit_code) = view::kilo(
            kilo::non_empty(&part.tool),
            input,
            metadata.and_then(|m| kilo::non_empty(&m.diff)),
            metadata.and_then(|m| m.exit.0),
            bodies,
        );
        Self {
            view: view.map(Box::new),
            exit_code,
            call_id: kilo::non_empty(&part.call_id)
                .or_else(|| kilo::non_empty(&part.id))
                .map(str::to_owned),
            tool: kilo::non_empty(&part.tool).map(str::to_owned),
            title: state.and_then(|s| kilo::non_empty(&s.title)).map(str::to_owned),
            summary: None,
            input: state.filter(|s| !s.input.is_empty_object()).and_then(|s| s.input.as_text()),
            output,
            error: if failed {
                state.and_then(|s| kilo::non_empty(&s.error)).map(one_line)
            } else {
                None
            },
            artifact: None,
            failed,
        }
    }
}
