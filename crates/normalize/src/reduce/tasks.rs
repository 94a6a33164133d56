//! The tasks lane: the task tree by `task_id` / `parent_task_id` (orphans grouped), status
//! precedence, and the todo list.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::event::RawEvent;
use crate::json::{id_at, str_at, string_at};

/// Normalized task status. Precedence: `failed > running > completed > queued`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskStatus {
    /// Not started.
    Queued,
    /// Done.
    Completed,
    /// In progress.
    Running,
    /// Failed or cancelled.
    Failed,
}

impl TaskStatus {
    /// Maps an engine status word; unknown words are `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "queued" | "pending" | "waiting" | "created" | "todo" | "blocked" => Some(Self::Queued),
            "running" | "in_progress" | "active" | "started" | "busy" => Some(Self::Running),
            "completed" | "complete" | "done" | "success" | "succeeded" | "ok" | "finished" => {
                Some(Self::Completed)
            }
            "failed" | "failure" | "error" | "errored" | "cancelled" | "canceled" | "aborted"
            | "killed" | "timeout" => Some(Self::Failed),
            _ => None,
        }
    }

    /// Merges a new report into the current status by precedence. A higher-precedence
    /// status wins, with one exception: `running` gives way to `completed` (the task
    /// finished). `failed` is therefore final, and a stale `queued` never hides progress.
    pub fn merge(self, incoming: Self) -> Self {
        if incoming >= self || (self == Self::Running && incoming == Self::Completed) {
            incoming
        } else {
            self
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct TaskRecord {
    order: usize,
    parent: Option<String>,
    status: TaskStatus,
    raw_status: Option<String>,
    description: Option<String>,
    lane_id: Option<String>,
    lane_label: Option<String>,
    child_session_id: Option<String>,
}

/// A todo item (BreadBoard todo snapshots, Kilo `todo.updated`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Todo {
    /// Item id, when the engine gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What to do.
    pub content: String,
    /// Normalized status.
    pub status: TaskStatus,
    /// Priority, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
}

/// A task event without a task id (e.g. `stop_requested`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSignal {
    /// The event's `kind`.
    pub kind: String,
    /// Id of the event.
    pub event_id: Option<String>,
}

/// The tasks lane. Serialized as a flat, depth-first list (no recursion, whatever the depth).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TasksLane {
    tasks: BTreeMap<String, TaskRecord>,
    /// The current todo list.
    pub todos: Vec<Todo>,
    /// Task events without a task id.
    pub signals: Vec<TaskSignal>,
    /// The tree or the todos changed since the last updates were taken.
    pub(crate) tree_changed: bool,
    pub(crate) todos_changed: bool,
    /// A todo list was ever given (an empty one included).
    pub(crate) todos_known: bool,
    /// What the updates sent so far said of each task.
    pub(crate) sent: BTreeMap<String, TaskSent>,
}

/// What the updates sent so far said of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskSent {
    parent: Option<String>,
    status: TaskStatus,
    rollup: TaskStatus,
    title: Option<String>,
}

impl TasksLane {
    /// `task.event`: updates the tree by `task_id` and optional `parent_task_id`.
    pub(crate) fn task_event(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        let Some(task_id) = id_at(p, &[&["task_id"], &["taskId"]]) else {
            let kind = str_at(p, &[&["kind"], &["type"]]).unwrap_or("unknown").to_owned();
            self.signals.push(TaskSignal { kind, event_id: ev.id.as_deref().map(str::to_owned) });
            return;
        };
        self.tree_changed = true;
        let raw_status = string_at(p, &[&["status"]]);
        let status = raw_status.as_deref().and_then(TaskStatus::parse);
        let parent = id_at(p, &[&["parent_task_id"], &["parentTaskId"], &["parent_id"]])
            .filter(|x| *x != task_id);
        let order = self.tasks.len();
        let rec = self.tasks.entry(task_id).or_insert_with(|| TaskRecord {
            order,
            parent: None,
            status: TaskStatus::Queued,
            raw_status: None,
            description: None,
            lane_id: None,
            lane_label: None,
            child_session_id: None,
        });
        if let Some(s) = status {
            rec.status = rec.status.merge(s);
        }
        if raw_status.is_some() {
            rec.raw_status = raw_status;
        }
        if parent.is_some() {
            rec.parent = parent;
        }
        let set = |slot: &mut Option<String>, v: Option<String>| {
            if v.is_some() {
                *slot = v;
            }
        };
        set(&mut rec.description, string_at(p, &[&["description"], &["title"], &["name"]]));
        set(&mut rec.lane_id, string_at(p, &[&["lane_id"]]));
        set(&mut rec.lane_label, string_at(p, &[&["lane_label"]]));
        set(&mut rec.child_session_id, string_at(p, &[&["child_session_id"]]));
    }

    /// `task.todo`: replaces the todo list.
    pub(crate) fn todos(&mut self, ev: &RawEvent) {
        let p = &ev.payload;
        let items = p
            .get("todos")
            .or_else(|| p.get("todo").and_then(|t| t.get("items")))
            .or_else(|| p.get("items"))
            .or_else(|| p.get("entries"))
            .and_then(Value::as_array);
        let Some(items) = items else {
            return;
        };
        self.todos_changed = true;
        self.todos_known = true;
        self.todos = items
            .iter()
            .map(|it| Todo {
                id: id_at(it, &[&["id"], &["item_id"]]),
                content: string_at(it, &[&["content"], &["title"], &["text"], &["description"]])
                    .unwrap_or_default(),
                status: str_at(it, &[&["status"]])
                    .and_then(TaskStatus::parse)
                    .unwrap_or(TaskStatus::Queued),
                priority: string_at(it, &[&["priority"]]),
            })
            .collect();
    }
}

/// One task in the flat tree.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskView<'a> {
    task_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_task_id: Option<&'a str>,
    group: &'static str,
    depth: usize,
    status: TaskStatus,
    rollup_status: TaskStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_status: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lane_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lane_label: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    child_session_id: Option<&'a str>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TasksView<'a> {
    tree: Vec<TaskView<'a>>,
    orphans: Vec<&'a str>,
    todos: &'a [Todo],
    signals: &'a [TaskSignal],
}

impl TasksLane {
    fn view(&self) -> TasksView<'_> {
        let by_order =
            |ids: &mut Vec<&str>| ids.sort_by_key(|id| self.tasks.get(*id).map_or(0, |r| r.order));
        let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut roots = Vec::new();
        let mut orphans = Vec::new();
        for (id, rec) in &self.tasks {
            match rec.parent.as_deref() {
                None => roots.push(id.as_str()),
                Some(p) if self.tasks.contains_key(p) => children.entry(p).or_default().push(id),
                Some(_) => orphans.push(id.as_str()),
            }
        }
        by_order(&mut roots);
        by_order(&mut orphans);
        children.values_mut().for_each(by_order);

        let mut visited = BTreeSet::new();
        let dfs = |start: &str,
                   group: &'static str,
                   visited: &mut BTreeSet<String>,
                   order: &mut Vec<(String, usize, &'static str)>| {
            let mut stack = vec![(start.to_owned(), 0usize)];
            while let Some((id, depth)) = stack.pop() {
                if !visited.insert(id.clone()) {
                    continue;
                }
                if let Some(kids) = children.get(id.as_str()) {
                    for k in kids.iter().rev() {
                        stack.push(((*k).to_owned(), depth + 1));
                    }
                }
                order.push((id, depth, group));
            }
        };
        let mut flat: Vec<(String, usize, &'static str)> = Vec::new();
        for r in &roots {
            dfs(r, "root", &mut visited, &mut flat);
        }
        for o in &orphans {
            dfs(o, "orphans", &mut visited, &mut flat);
        }
        // Parent cycles reach no root: they are shown under orphans, cut at the first repeat.
        let mut cyclic: Vec<&str> =
            self.tasks.keys().map(String::as_str).filter(|id| !visited.contains(*id)).collect();
        by_order(&mut cyclic);
        for c in &cyclic {
            if !visited.contains(*c) {
                orphans.push(c);
                dfs(c, "orphans", &mut visited, &mut flat);
            }
        }

        // Roll-up: each task shows the highest-precedence status of its subtree. Children
        // come after their parent in `flat`, so a reverse pass folds them upward.
        let mut rollup: BTreeMap<&str, TaskStatus> = BTreeMap::new();
        for (id, _, _) in flat.iter().rev() {
            let Some((key, rec)) = self.tasks.get_key_value(id.as_str()) else { continue };
            let mut s = rec.status;
            if let Some(kids) = children.get(key.as_str()) {
                for k in kids {
                    if let Some(ks) = rollup.get(k) {
                        s = s.max(*ks);
                    }
                }
            }
            rollup.insert(key.as_str(), s);
        }
        let tree = flat
            .iter()
            .filter_map(|(id, depth, group)| {
                let (key, rec) = self.tasks.get_key_value(id.as_str())?;
                Some(TaskView {
                    task_id: key,
                    parent_task_id: rec.parent.as_deref(),
                    group,
                    depth: *depth,
                    status: rec.status,
                    rollup_status: rollup.get(key.as_str()).copied().unwrap_or(rec.status),
                    raw_status: rec.raw_status.as_deref(),
                    description: rec.description.as_deref(),
                    lane_id: rec.lane_id.as_deref(),
                    lane_label: rec.lane_label.as_deref(),
                    child_session_id: rec.child_session_id.as_deref(),
                })
            })
            .collect();
        let orphans = orphans
            .iter()
            .filter_map(|o| self.tasks.get_key_value(*o).map(|(k, _)| k.as_str()))
            .collect();
        TasksView { tree, orphans, todos: &self.todos, signals: &self.signals }
    }
}

impl TasksLane {
    /// The tasks whose node changed since the last call (with their position among all
    /// tasks), marked sent: `(order, id, parent, status, rollup, title, lane, child)`.
    pub(crate) fn take_changed(&mut self) -> Vec<TaskNode<'_>> {
        if !std::mem::take(&mut self.tree_changed) {
            return Vec::new();
        }
        let changed: Vec<(String, TaskSent)> = self
            .view()
            .tree
            .iter()
            .filter_map(|t| {
                let now = TaskSent {
                    parent: t.parent_task_id.map(str::to_owned),
                    status: t.status,
                    rollup: t.rollup_status,
                    title: t.description.map(str::to_owned),
                };
                (self.sent.get(t.task_id) != Some(&now)).then(|| (t.task_id.to_owned(), now))
            })
            .collect();
        for (id, now) in &changed {
            self.sent.insert(id.clone(), now.clone());
        }
        changed
            .into_iter()
            .map(|(id, _)| id)
            .filter_map(|id| {
                let (key, rec) = self.tasks.get_key_value(&id)?;
                let sent = self.sent.get(&id)?;
                Some(TaskNode {
                    order: rec.order as u64,
                    id: key,
                    parent: rec.parent.as_deref(),
                    status: rec.status,
                    rollup: sent.rollup,
                    title: rec.description.as_deref(),
                    lane: rec.lane_label.as_deref().or(rec.lane_id.as_deref()),
                    child_session: rec.child_session_id.as_deref(),
                })
            })
            .collect()
    }

    /// Every task, in tree order (for a resync).
    pub(crate) fn nodes(&self) -> Vec<TaskNode<'_>> {
        self.view()
            .tree
            .iter()
            .filter_map(|t| {
                let (key, rec) = self.tasks.get_key_value(t.task_id)?;
                Some(TaskNode {
                    order: rec.order as u64,
                    id: key,
                    parent: rec.parent.as_deref(),
                    status: rec.status,
                    rollup: t.rollup_status,
                    title: rec.description.as_deref(),
                    lane: rec.lane_label.as_deref().or(rec.lane_id.as_deref()),
                    child_session: rec.child_session_id.as_deref(),
                })
            })
            .collect()
    }
}

/// One task as an update carries it.
#[derive(Debug)]
pub(crate) struct TaskNode<'a> {
    pub(crate) order: u64,
    pub(crate) id: &'a str,
    pub(crate) parent: Option<&'a str>,
    pub(crate) status: TaskStatus,
    pub(crate) rollup: TaskStatus,
    pub(crate) title: Option<&'a str>,
    pub(crate) lane: Option<&'a str>,
    pub(crate) child_session: Option<&'a str>,
}

impl Serialize for TasksLane {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.view().serialize(s)
    }
}
