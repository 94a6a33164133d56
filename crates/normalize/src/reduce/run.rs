//! The run lane: run status and turn, checkpoints, artifact links, changed files, limits,
//! skills, reward, context-tree summary and the run summary record.

use bb_payload::{LooseBool, LooseI64, LooseObj, LooseStr, LooseU64, Present};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::blocks::NoticeLevel;
use crate::event::RawEvent;
use crate::json::{at, id_at, str_at, string_at};
use crate::kilo;
use crate::redact::{redact_value, redacted};

/// Whether a turn is in progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RunState {
    /// No turn in progress.
    #[default]
    Idle,
    /// A turn is in progress.
    Running,
    /// The engine is retrying.
    Retrying,
}

/// A checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// Checkpoint id.
    pub checkpoint_id: String,
    /// Creation time as the engine gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Value>,
    /// One-line preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// Whether it was restored.
    pub restored: bool,
}

/// An artifact / log link.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogLink {
    /// The link.
    pub url: String,
    /// Id of the event that announced it.
    pub event_id: Option<String>,
}

/// A file changed by the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Path as the engine gives it.
    pub path: String,
    /// `added`, `modified`, `deleted` or `edited`.
    pub status: String,
    /// Lines added, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additions: Option<u64>,
    /// Lines deleted, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletions: Option<u64>,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    /// It finished.
    Done,
    /// The user stopped it.
    Stopped,
    /// It failed.
    Failed,
}

/// The summary record of the last finished turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// The turn counter value the summary belongs to.
    pub turn_index: u64,
    /// How the turn ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Whether the run completed its goal, when the engine says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<bool>,
    /// Why the run ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Steps taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
    /// Engine log directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging_dir: Option<String>,
    /// Usage figures (latency, tokens), redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// Id of the last event that finalized the summary.
    pub event_id: Option<String>,
}

/// The run lane.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunLane {
    /// Session title, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Context window use and cost (ACP `usage_update`: `used`, `size`, `cost`), redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// The commands the agent offers for the prompt box's `/` menu (ACP
    /// `availableCommands`: `name`, `description`, `input`), redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<Value>,
    /// The session's config options (ACP `configOptions`: the model and mode pickers),
    /// redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_options: Option<Value>,
    /// The session's current mode, when the agent has modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Whether a turn is in progress.
    pub state: RunState,
    /// The current turn number, when the engine numbers turns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<i64>,
    /// Turns started so far.
    pub turns_started: u64,
    /// Run-finished events seen (several per turn on both engines).
    pub finish_events: u64,
    /// Checkpoints, as last listed.
    pub checkpoints: Vec<Checkpoint>,
    /// Artifact links, in first-seen order, without duplicates.
    pub log_links: Vec<LogLink>,
    /// Files changed, by path, last report wins.
    pub changed_files: Vec<FileChange>,
    /// Latest rate-limit report, redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<Value>,
    /// Latest reward summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reward: Option<Value>,
    /// Skills selection, when published.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills_selection: Option<Value>,
    /// Skills catalog version and size, when published.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills_catalog: Option<Value>,
    /// Node count of the last context-tree snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctree_node_count: Option<u64>,
    /// Whether a continuity gap was reported.
    pub gap_detected: bool,
    /// Error cards raised.
    pub errors: u64,
    /// The last finished turn's summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<RunSummary>,
    /// Which turn events belong to now: it moves on at each turn start and each user
    /// message (engines that do not number turns still start each with a message).
    #[serde(skip)]
    seq: u64,
    /// The turn `summary` belongs to.
    #[serde(skip)]
    summary_seq: u64,
    /// The turn the user stopped, once the engine said so.
    #[serde(skip)]
    stopped_seq: Option<u64>,
    /// `errors` when the current turn began.
    #[serde(skip)]
    errors_before: u64,
    /// Entries of `changed_files` changed since the last updates were taken.
    #[serde(skip)]
    pub(crate) files_changed: Vec<usize>,
}

/// Whether an engine's end reason says the user stopped the turn.
pub(crate) fn says_stopped(reason: &str) -> bool {
    let r = reason.to_ascii_lowercase();
    ["stop", "interrupt", "abort", "cancel"].iter().any(|w| r.contains(w))
}

impl RunLane {
    /// `turn.start`.
    /// A new turn begins (a user message, or the engine's turn start).
    pub(crate) fn next_turn(&mut self) {
        self.seq += 1;
        self.errors_before = self.errors;
    }

    pub(crate) fn turn_start(&mut self, ev: &RawEvent) {
        self.turns_started += 1;
        self.next_turn();
        self.state = RunState::Running;
        if let Some(t) = ev.turn.or_else(|| ev.payload.read::<TurnField>().turn.0) {
            self.turn = Some(t);
        }
    }

    /// `run.status` (Kilo `session.status`): busy, idle or retry.
    pub(crate) fn status(&mut self, ev: &RawEvent) {
        let fields: kilo::RunStatus<'_> = ev.payload.read();
        match fields.get() {
            Some("busy") => self.state = RunState::Running,
            Some("retry") => self.state = RunState::Retrying,
            Some("idle") => self.state = RunState::Idle,
            _ => {}
        }
    }

    /// The user stopped the current turn (the engine said so). Returns whether this is news
    /// (the first word of it for this turn).
    pub(crate) fn stopped(&mut self) -> bool {
        let news = self.stopped_seq != Some(self.seq);
        self.stopped_seq = Some(self.seq);
        if let Some(s) = self.summary.as_mut().filter(|_| self.summary_seq == self.seq) {
            s.outcome = Some(Outcome::Stopped);
        }
        news
    }

    /// Whether the user stopped the current turn (the engine said so).
    pub(crate) fn stopped_now(&self) -> bool {
        self.stopped_seq == Some(self.seq)
    }

    /// Whether a finish event says the user stopped the turn (its end reason, or ACP's
    /// `cancelled` stop reason).
    pub(crate) fn finish_says_stopped(ev: &RawEvent) -> bool {
        let f: Finish<'_> = ev.payload.read();
        let reason = f
            .summary
            .get()
            .and_then(|s| kilo::non_empty(&s.reason))
            .or_else(|| kilo::non_empty(&f.reason))
            .or_else(|| kilo::non_empty(&f.stop_reason));
        reason.is_some_and(says_stopped)
    }

    /// `run.finished`: finalizes the summary of the current turn. Several finish events of
    /// one turn (`completion` + `run_finished`, `session.idle` + `turn.close`) merge: a field
    /// is overwritten only by a value that is present.
    pub(crate) fn finished(&mut self, ev: &RawEvent) {
        self.state = RunState::Idle;
        self.finish_events += 1;
        let turn_index = self.turns_started;
        let stopped = self.stopped_seq == Some(self.seq);
        let erred = self.errors > self.errors_before;
        let same = self.summary_seq == self.seq;
        self.summary_seq = self.seq;
        let summary = match &mut self.summary {
            Some(s) if same => s,
            slot => slot.insert(RunSummary { turn_index, ..RunSummary::default() }),
        };
        let f: Finish<'_> = ev.payload.read();
        let head = f.summary.get();
        let completed = head.and_then(|s| s.completed.0).or(f.completed.0);
        let reason = head
            .and_then(|s| kilo::non_empty(&s.reason))
            .or_else(|| kilo::non_empty(&f.reason))
            .map(str::to_owned);
        // `summary.steps_taken` when present, whatever its value, else `steps`.
        let steps = head.and_then(|s| s.steps_taken.0).map_or(f.steps.0, |taken| taken.0);
        let logging_dir = kilo::non_empty(&f.logging_dir).map(str::to_owned);
        let usage = f.usage.0.map(|mut u| {
            redact_value(&mut u);
            u
        });
        if completed.is_some() {
            summary.completed = completed;
        }
        if reason.is_some() {
            summary.reason = reason;
        }
        if steps.is_some() {
            summary.steps = steps;
        }
        if logging_dir.is_some() {
            summary.logging_dir = logging_dir;
        }
        if usage.is_some() {
            summary.usage = usage;
        }
        summary.event_id = ev.id.as_deref().map(str::to_owned);
        summary.outcome = Some(if stopped {
            Outcome::Stopped
        } else if erred
            || summary.completed == Some(false)
            || summary.outcome == Some(Outcome::Failed)
        {
            Outcome::Failed
        } else {
            Outcome::Done
        });
    }

    /// `run.error_or_gap` bookkeeping (the card itself is in the transcript, of `level`).
    pub(crate) fn error_or_gap(&mut self, ev: &RawEvent, level: NoticeLevel) {
        if ev.kind == "stream.gap" {
            self.gap_detected = true;
        } else if level == NoticeLevel::Error {
            self.errors += 1;
        }
    }

    /// `checkpoint.list`: replaces the list, keeping restored marks.
    pub(crate) fn checkpoints(&mut self, ev: &RawEvent) {
        let Some(items) = ev.payload.get("checkpoints").and_then(Value::as_array) else {
            return;
        };
        let old = std::mem::take(&mut self.checkpoints);
        self.checkpoints = items
            .iter()
            .filter_map(|c| {
                let id = id_at(c, &[&["checkpoint_id"], &["id"]])?;
                let restored = old.iter().any(|o| o.checkpoint_id == id && o.restored);
                Some(Checkpoint {
                    created_at: c.get("created_at").cloned(),
                    preview: string_at(c, &[&["preview"]]),
                    checkpoint_id: id,
                    restored,
                })
            })
            .collect();
    }

    /// `checkpoint.restored`: marks the checkpoint. Returns its id for the chat notice.
    pub(crate) fn restored(&mut self, ev: &RawEvent) -> Option<String> {
        let id = id_at(&ev.payload, &[&["checkpoint_id"], &["id"]])?;
        match self.checkpoints.iter_mut().find(|c| c.checkpoint_id == id) {
            Some(c) => c.restored = true,
            None => self.checkpoints.push(Checkpoint {
                checkpoint_id: id.clone(),
                created_at: None,
                preview: None,
                restored: true,
            }),
        }
        Some(id)
    }

    /// `run.log_link`.
    pub(crate) fn log_link(&mut self, ev: &RawEvent) {
        let Some(url) = string_at(&ev.payload, &[&["url"], &["path"], &["href"]]) else {
            return;
        };
        if !self.log_links.iter().any(|l| l.url == url) {
            self.log_links.push(LogLink { url, event_id: ev.id.as_deref().map(str::to_owned) });
        }
    }

    /// `run.diff`: Kilo `session.diff` (the full list) or `file.edited` (one file).
    pub(crate) fn diff(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        if let Some(file) = str_at(p, &[&["file"]]) {
            self.upsert_file(FileChange {
                path: file.to_owned(),
                status: "edited".to_owned(),
                additions: None,
                deletions: None,
            });
            return;
        }
        let Some(items) = p.get("diff").and_then(Value::as_array) else {
            return;
        };
        for d in items {
            if let Some(path) = string_at(d, &[&["path"], &["file"]]) {
                self.upsert_file(FileChange {
                    path,
                    status: string_at(d, &[&["status"]]).unwrap_or_else(|| "modified".to_owned()),
                    additions: d.get("additions").and_then(Value::as_u64),
                    deletions: d.get("deletions").and_then(Value::as_u64),
                });
            }
        }
    }

    /// The files a finished tool call's diffs changed: BreadBoard and ACP say so only there.
    pub(crate) fn changed_by(&mut self, tool: &super::blocks::ToolBlock) {
        if let Some(bb_protocol::v1::ToolView::Diff { files }) = tool.view.as_deref() {
            for f in files {
                self.changed_by_tool(f);
            }
        }
    }

    /// A file a tool's diff changed: created (from `/dev/null`), deleted (to it) or modified,
    /// with the lines the diff adds and removes (the engine's next report of the file, Kilo's
    /// `session.diff`, replaces it).
    fn changed_by_tool(&mut self, diff: &bb_protocol::v1::ToolDiff<'_>) {
        let Some(path) = diff.path.as_deref() else { return };
        let text = &diff.unified.text;
        let (mut additions, mut deletions) = (0, 0);
        for line in text.lines() {
            if line.starts_with('+') && !line.starts_with("+++") {
                additions += 1;
            } else if line.starts_with('-') && !line.starts_with("---") {
                deletions += 1;
            }
        }
        let status = if text.lines().any(|l| l == "--- /dev/null") {
            "added"
        } else if text.lines().any(|l| l == "+++ /dev/null") {
            "deleted"
        } else {
            "modified"
        };
        let counted = !diff.unified.truncated;
        self.upsert_file(FileChange {
            path: path.to_owned(),
            status: status.to_owned(),
            additions: counted.then_some(additions),
            deletions: counted.then_some(deletions),
        });
    }

    fn upsert_file(&mut self, change: FileChange) {
        let i = match self.changed_files.iter().position(|f| f.path == change.path) {
            Some(i) => {
                let f = &mut self.changed_files[i];
                if change.additions.is_some() || f.status == "edited" || change.status != "edited" {
                    *f = change;
                }
                i
            }
            None => {
                self.changed_files.push(change);
                self.changed_files.len() - 1
            }
        };
        if !self.files_changed.contains(&i) {
            self.files_changed.push(i);
        }
    }

    /// `run.limits`, `reward.update`, `skills.*`, `ctree.snapshot`, `session.info`.
    pub(crate) fn info(&mut self, class: crate::class::EventClass, ev: &RawEvent) {
        use crate::class::EventClass as C;
        let p = &ev.payload;
        match class {
            C::RunLimits => self.limits = Some(redacted(p)),
            C::RewardUpdate => self.reward = Some(redacted(p.get("summary").unwrap_or(p))),
            C::SkillsSelection => self.skills_selection = p.get("selection").map(redacted),
            C::SkillsCatalog => {
                let skills =
                    at(p, &["catalog", "skills"]).and_then(Value::as_array).map_or(0, Vec::len);
                let version =
                    at(p, &["catalog", "catalog_version"]).cloned().unwrap_or(Value::Null);
                self.skills_catalog =
                    Some(serde_json::json!({ "version": version, "skills": skills }));
                if let Some(sel) = p.get("selection") {
                    self.skills_selection = Some(redacted(sel));
                }
            }
            C::CtreeSnapshot => {
                self.ctree_node_count = at(p, &["snapshot", "node_count"]).and_then(Value::as_u64);
            }
            C::SessionInfo => {
                let fields = kilo::kept::<kilo::InfoFields<'_>>(&ev.payload);
                if let Some(t) = fields.info.get().and_then(|i| kilo::non_empty(&i.title))
                    && ev.kind != "session.deleted"
                {
                    self.title = Some(t.to_owned());
                }
            }
            _ => {}
        }
    }
}

/// A turn start's `turn` (when the envelope has none).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TurnField {
    turn: LooseI64,
}

/// What a finish event (BreadBoard `completion` / `run_finished`, Kilo `session.idle` /
/// `session.turn.close`) says of the run, each field of another shape absent.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Finish<'a> {
    #[serde(borrow)]
    summary: LooseObj<FinishSummary<'a>>,
    completed: LooseBool,
    #[serde(borrow)]
    reason: LooseStr<'a>,
    steps: LooseU64,
    #[serde(borrow)]
    logging_dir: LooseStr<'a>,
    /// Read whole (only its subtree is built): it is kept, redacted.
    usage: LooseObj<Value>,
    /// ACP's `turn_ended` reason.
    #[serde(rename = "stopReason", borrow)]
    stop_reason: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FinishSummary<'a> {
    completed: LooseBool,
    #[serde(borrow)]
    reason: LooseStr<'a>,
    /// Present whatever its value: then `steps` is not read, even if this is no count.
    steps_taken: Present<LooseU64>,
}
