//! The config options a user picked (model, mode, …), remembered per workspace and agent in
//! the bridge's state directory (`acp-config.json`), and applied to each new session.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{Map, Value, json};

use crate::caps::select_values;

/// The file under the state directory.
pub const CONFIG_FILE: &str = "acp-config.json";

/// The remembered options of one agent in one workspace.
#[derive(Debug)]
pub(crate) struct ConfigMemory {
    path: Option<PathBuf>,
    agent: String,
    values: Mutex<BTreeMap<String, Value>>,
}

impl ConfigMemory {
    /// Reads what was remembered for `agent` under `state_dir` (nothing when `None`, or the
    /// file is missing or unreadable: a broken file is logged and replaced at the next
    /// change).
    pub(crate) fn load(state_dir: Option<PathBuf>, agent: &str) -> Self {
        let path = state_dir.map(|d| d.join(CONFIG_FILE));
        let values = path
            .as_ref()
            .and_then(|p| match std::fs::read(p) {
                Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                    Ok(v) => Some(v),
                    Err(err) => {
                        tracing::warn!(path = %p.display(), %err, "the remembered ACP config options are not JSON; starting afresh");
                        None
                    }
                },
                Err(_) => None,
            })
            .and_then(|v| v.get("agents")?.get(agent)?.as_object().cloned())
            .map(|m| m.into_iter().collect())
            .unwrap_or_default();
        Self { path, agent: agent.to_owned(), values: Mutex::new(values) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Value>> {
        self.values.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What is remembered, by config option id.
    pub(crate) fn values(&self) -> BTreeMap<String, Value> {
        self.lock().clone()
    }

    /// Remembers a choice and writes the file (`bb_service::fs::write_atomic`); a failed write is
    /// logged: the choice still applies to this bridge's new sessions.
    pub(crate) fn remember(&self, config_id: &str, value: Value) {
        let values = {
            let mut v = self.lock();
            v.insert(config_id.to_owned(), value);
            v.clone()
        };
        let Some(path) = &self.path else { return };
        let mut doc = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        let agents = doc
            .as_object_mut()
            .map(|o| o.entry("agents").or_insert_with(|| json!({})))
            .filter(|a| a.is_object());
        if let Some(Value::Object(agents)) = agents {
            agents.insert(
                self.agent.clone(),
                Value::Object(values.into_iter().collect::<Map<_, _>>()),
            );
        }
        let bytes = serde_json::to_vec_pretty(&doc).unwrap_or_default();
        if let Err(err) = bb_service::fs::write_atomic(path, &bytes) {
            tracing::warn!(path = %path.display(), %err, "cannot remember the ACP config options");
        }
    }
}

/// The option of `options` a wanted value names: by id, else by category (`model`, `mode`).
pub(crate) fn option_for<'a>(options: &'a [Value], key: &str) -> Option<&'a Value> {
    options
        .iter()
        .find(|o| o.get("id").and_then(Value::as_str) == Some(key))
        .or_else(|| options.iter().find(|o| o.get("category").and_then(Value::as_str) == Some(key)))
}

/// The `(configId, value)` changes that bring a new session's `options` to what is
/// remembered, skipping values the session already has or no longer offers.
pub(crate) fn remembered_changes(
    options: &[Value],
    remembered: &BTreeMap<String, Value>,
) -> Vec<(String, Value)> {
    let mut changes = Vec::new();
    for (id, value) in remembered {
        let Some(option) = option_for(options, id) else { continue };
        let Some(option_id) = option.get("id").and_then(Value::as_str) else { continue };
        if option.get("currentValue") == Some(value) {
            continue;
        }
        let takes = match value {
            Value::Bool(_) => option.get("type").and_then(Value::as_str) == Some("boolean"),
            Value::String(v) => select_values(option).contains(&v.as_str()),
            _ => false,
        };
        if takes {
            changes.push((option_id.to_owned(), value.clone()));
        }
    }
    changes
}
