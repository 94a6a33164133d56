//! The engine flags, shared verbatim by every bridge binary (`#[command(flatten)]`).

use std::path::PathBuf;

use bb_kilo::supervisor::USERNAME;
use clap::{Args, ValueEnum};

/// The engine behind the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineKind {
    /// The Kilo CLI server (`kilo serve`).
    Kilo,
    /// A BreadBoard CLI-bridge engine at --engine-url.
    Breadboard,
    /// Offline demo: a fake BreadBoard engine in-process plays a recorded turn (streamed
    /// reply, a tool call, a permission prompt and its diff) for every message.
    Demo,
    /// Any Agent Client Protocol agent, started with the command given after `--`
    /// (e.g. `--engine acp -- kilo acp`).
    Acp,
}

/// Which engine to drive and how to reach or start it.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// The workspace directory: the engine's sessions work in it, files and paths are
    /// contained in it. Required when the bridge spawns the engine (`--engine kilo` without
    /// `--engine-url`); elsewhere optional, the current directory by default.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Another workspace folder (repeatable; a multi-root workspace): each session works in
    /// one folder (`bb.createSession {folder}`, default the first: `--workspace`, else the
    /// first `--folder`), its files and paths contained there. Kilo serves every folder from
    /// one server (each its own project `directory`); the demo, BreadBoard and ACP get one
    /// engine instance or adapter per folder, started on the folder's first session.
    #[arg(long = "folder", value_name = "DIR")]
    pub folders: Vec<PathBuf>,

    /// Which engine to drive.
    #[arg(long, value_enum, value_name = "KIND", default_value = "demo")]
    pub engine: EngineKind,

    /// Spawn and supervise this engine executable (default: `kilo` from PATH). The engine
    /// gets a fresh password through its environment, an allow-listed environment (PATH,
    /// HOME, XDG_*, LANG/LC_*, TZ, KILO_*), its own process group, and dies with the bridge.
    #[arg(long, value_name = "PATH", conflicts_with = "engine_url")]
    pub engine_bin: Option<PathBuf>,

    /// Attach to an engine already running at this loopback URL instead of spawning one.
    #[arg(long, value_name = "URL")]
    pub engine_url: Option<String>,

    /// With --engine-url: the environment variable holding the engine's password (never pass
    /// a password as an argument). Without it, the engine is assumed unsecured.
    #[arg(long, value_name = "VAR", requires = "engine_url")]
    pub engine_password_env: Option<String>,

    /// BreadBoard: the environment variable holding the engine's bearer token (never pass a
    /// token as an argument). Without it, the engine is assumed unsecured.
    #[arg(long, value_name = "VAR", requires = "engine_url")]
    pub engine_token_env: Option<String>,

    /// BreadBoard: the agent config path for sessions the webview creates without one.
    #[arg(long, value_name = "PATH")]
    pub engine_config: Option<String>,

    /// BreadBoard: where stream positions, downloaded artifacts and diffs are kept
    /// (default: `<workspace or cwd>/.bb-bridge/state`; the demo uses a temporary dir).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// With --engine-url: the Basic-auth username.
    #[arg(long, value_name = "NAME", default_value = USERNAME, requires = "engine_url")]
    pub engine_username: String,

    /// Seconds to wait for a spawned engine to become healthy.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub start_timeout: u64,

    /// Trust the workspace from the start: approving a permission request that writes or
    /// runs commands is refused (`workspace_untrusted`) until the workspace is trusted, here
    /// or by the webview (`bb.init({workspaceTrusted: true})`). With `--engine acp` and the
    /// gateway's `acp_connect`, an agent's cwd may also leave the workspace.
    #[arg(long)]
    pub trusted: bool,

    /// Seconds after which a permission request or question nobody answered expires and the
    /// engine is told to deny it (default: it waits for the user or `bb.stop`).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub permission_timeout: Option<u64>,

    /// Seconds between SIGTERM and SIGKILL when stopping a spawned engine.
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    pub stop_grace: u64,

    /// `--engine acp`: the agent's command and arguments, after `--`. It runs in the
    /// workspace with the allow-listed environment, its own process group, and dies with the
    /// bridge.
    #[arg(last = true, value_name = "AGENT_COMMAND")]
    pub agent_command: Vec<String>,
}

/// The usage line of a bridge binary named `$bin`: where `--workspace` is required (the bridge
/// spawns the Kilo server) and where it is optional.
#[macro_export]
macro_rules! usage {
    ($bin:literal) => {
        concat!(
            $bin,
            " [--workspace <DIR>] [--folder <DIR>]... [OPTIONS]  (the offline demo engine)\n       ",
            $bin,
            " --workspace <DIR> --engine kilo [--engine-bin <PATH>] [OPTIONS]\n       ",
            $bin,
            " [--workspace <DIR>] --engine kilo --engine-url <URL> [OPTIONS]\n       ",
            $bin,
            " [--workspace <DIR>] --engine breadboard --engine-url <URL> [OPTIONS]\n       ",
            $bin,
            " [--workspace <DIR>] --engine acp [OPTIONS] -- <AGENT_COMMAND>..."
        )
    };
}
