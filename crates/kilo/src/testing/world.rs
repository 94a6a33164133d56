//! An isolated world for a Kilo engine: a temp dir with the workspace, HOME and XDG dirs, the
//! environment that points the engine at them, and the engine config naming the mock LLM.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use tempfile::TempDir;

use super::MockLlm;

/// The switches that keep Kilo offline and to itself: each `KILO_DISABLE_<name>=1`.
const KILO_DISABLED: [&str; 7] = [
    "AUTOUPDATE",
    "MODELS_FETCH",
    "DEFAULT_PLUGINS",
    "SHARE",
    "LSP_DOWNLOAD",
    "CLAUDE_CODE",
    "SESSION_INGEST",
];

/// A temp dir holding `project/` (the workspace), `home/` and `xdg/{config/kilo,data,state,
/// cache}/`; removed on drop.
#[derive(Debug)]
pub struct KiloWorld {
    dir: TempDir,
}

impl KiloWorld {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["project", "home", "xdg/config/kilo", "xdg/data", "xdg/state", "xdg/cache"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Self { dir }
    }

    /// The world's root (parent of `project/`).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `sub` below the root.
    pub fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// The engine's environment: HOME and XDG dirs inside the world, telemetry off and the
    /// `KILO_DISABLE_*` switches on. No `PATH`: callers add what their process needs.
    pub fn env(&self) -> Vec<(String, String)> {
        let p = |s: &str| self.path(s).display().to_string();
        let mut env = vec![
            ("HOME".to_owned(), p("home")),
            ("XDG_CONFIG_HOME".to_owned(), p("xdg/config")),
            ("XDG_DATA_HOME".to_owned(), p("xdg/data")),
            ("XDG_STATE_HOME".to_owned(), p("xdg/state")),
            ("XDG_CACHE_HOME".to_owned(), p("xdg/cache")),
            ("KILO_TELEMETRY_LEVEL".to_owned(), "off".to_owned()),
        ];
        env.extend(KILO_DISABLED.map(|flag| (format!("KILO_DISABLE_{flag}"), "1".to_owned())));
        env
    }

    /// The `OPENCODE_*` switches that keep opencode offline and to itself, as `NAME=1`
    /// words for `env` (the bridge's environment allow-list passes `KILO_*` only).
    pub fn opencode_switches() -> Vec<String> {
        let mut words = vec!["OPENCODE_TELEMETRY_LEVEL=off".to_owned()];
        words.extend(KILO_DISABLED.map(|flag| format!("OPENCODE_DISABLE_{flag}=1")));
        words
    }

    /// Starts the mock LLM (chunks `chunk_delay` apart) and writes the Kilo config naming it,
    /// with `bash` and `edit` the engine's permissions for its shell and edit tools (`"ask"`,
    /// `"allow"`, `"deny"`). Keep the returned value alive as long as the engine runs.
    pub fn start_mock_llm(&self, chunk_delay: Duration, bash: &str, edit: &str) -> MockLlm {
        let mock = MockLlm::start(self.root(), chunk_delay);
        self.write_kilo_config(mock.port(), bash, edit);
        mock
    }

    /// `xdg/config/kilo/kilo.json` as `engine-peer/run-engine.sh` writes it (with a second
    /// model, `mock/other-model`, of a 64000-token context), and the same as
    /// `xdg/config/opencode/opencode.json`.
    fn write_kilo_config(&self, mock_port: u16, bash: &str, edit: &str) {
        let cfg = json!({
            "$schema": "https://app.kilo.ai/config.json",
            "model": "mock/mock-model",
            "small_model": "mock/mock-model",
            "autoupdate": false,
            "share": "disabled",
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock LLM",
                "options": {"baseURL": format!("http://127.0.0.1:{mock_port}/v1"), "apiKey": "mock-key"},
                "models": {"mock-model": {"name": "Mock Model", "tool_call": true,
                                          "limit": {"context": 128000, "output": 4096}},
                           "other-model": {"name": "Other Model", "tool_call": true,
                                           "limit": {"context": 64000, "output": 4096}}}}},
            "permission": {"bash": bash, "edit": edit},
            "enabled_providers": ["mock"],
            "snapshot": false
        });
        let cfg = serde_json::to_vec_pretty(&cfg).unwrap();
        std::fs::write(self.path("xdg/config/kilo/kilo.json"), &cfg).unwrap();
        // opencode reads the same config from its own directory.
        std::fs::create_dir_all(self.path("xdg/config/opencode")).unwrap();
        std::fs::write(self.path("xdg/config/opencode/opencode.json"), &cfg).unwrap();
    }
}

impl Default for KiloWorld {
    fn default() -> Self {
        Self::new()
    }
}
