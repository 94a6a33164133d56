//! Builds the engine adapter (and, in spawn mode, its supervision) from [`EngineArgs`].

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bb_breadboard::client::BreadboardClient;
use bb_breadboard::{BreadboardAdapter, BreadboardConfig};
use bb_engine_client::transport::{EngineAuth, HttpOptions, HttpTransport};
use bb_fake_engine::{EngineConfig, FakeEngine, RunningEngine, ScriptSource};
use bb_host::HostConfig;
use bb_kilo::supervisor::{EngineEndpoint, KiloConfig, KiloSupervisor};
use bb_kilo::{KiloAdapter, KiloOptions, KiloProbe};
use bb_service::{
    EngineAdapter, EngineError, FolderEngine, FolderFactory, Folders, InputReceiver, Pace,
    ServiceConfig, Supervision, SystemClock,
};
use bb_supervisor::TokioSpawner;
use secrecy::SecretString;

use crate::args::{EngineArgs, EngineKind};

/// The recorded demo turn, compiled in so the demo works from any directory, offline.
const DEMO_TURN: &str = include_str!("../../../fixtures/demo/breadboard_demo.jsonl");

/// Why the engine could not be set up. Every message says what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// A flag the chosen engine needs is missing.
    #[error("{0}")]
    Missing(&'static str),
    /// The workspace (or the current directory) cannot be used: it is missing, not a
    /// directory, or unreadable. Said once, with what to do.
    #[error(
        "the workspace {} {why}: pass --workspace an existing directory (or leave it out to \
         work in the current directory, where the engine allows it)",
        path.display()
    )]
    Workspace {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A secret's environment variable cannot be read.
    #[error("reading the engine secret from ${var}: {source} (export it, or drop the flag)")]
    SecretEnv {
        /// The variable named by the flag.
        var: String,
        /// Why.
        source: std::env::VarError,
    },
    /// The temporary state directory or the demo engine could not be set up.
    #[error("starting the demo engine: {0}")]
    Demo(std::io::Error),
    /// The engine URL is unusable.
    #[error("engine URL: {0}")]
    EngineUrl(String),
    /// The engine executable cannot be found or run.
    #[error(
        "the engine executable {0} was not found or is not executable: install it with \
         `bash scripts/engine.sh` (prints its path) and pass --engine-bin PATH, or put `kilo` \
         on PATH"
    )]
    EngineBinary(PathBuf),
    /// Attaching to a running engine failed.
    #[error("attaching to the engine: {0}")]
    Attach(EngineError),
}

/// One engine adapter ready for a service: the adapter, its updates and, when the bridge
/// spawns the engine, the supervision that starts it.
#[derive(Debug)]
pub struct EngineParts {
    /// The adapter.
    pub adapter: Arc<dyn EngineAdapter>,
    /// Its input stream.
    pub updates: InputReceiver,
    /// Spawn mode: how to start and restart the engine.
    pub supervision: Option<Supervision>,
}

/// The resolved engine setup; owns the in-process demo engine and its temporary state
/// directory for as long as it lives.
#[derive(Debug)]
pub struct Launcher {
    args: EngineArgs,
    root: PathBuf,
    /// The workspace folders, canonical: `root` first, then each other `--folder`.
    folders: Vec<PathBuf>,
    state_dir: PathBuf,
    breadboard_url: Option<(String, Option<String>)>,
    _demo: Option<RunningEngine>,
    _demo_state: Option<tempfile::TempDir>,
    /// Gathering while busy, for the service and the engine's event path.
    pace: Option<Pace>,
}

impl Launcher {
    /// Resolves the workspace and state directory and, for `--engine demo`, starts the
    /// in-process demo engine on a loopback port.
    pub async fn start(args: EngineArgs) -> Result<Self, LaunchError> {
        Self::start_paced(args, None).await
    }

    /// [`Launcher::start`] for a bridge whose runtime `pace` paces (`bb_service::pace`): the
    /// service counts and publishes into it.
    pub async fn start_paced(args: EngineArgs, pace: Option<Pace>) -> Result<Self, LaunchError> {
        let mut folders: Vec<PathBuf> = Vec::new();
        for given in args.workspace.iter().chain(&args.folders) {
            let folder = workspace_dir(given)?;
            if !folders.contains(&folder) {
                folders.push(folder);
            }
        }
        let root = match folders.first() {
            Some(first) => first.clone(),
            None => std::env::current_dir().map_err(|e| LaunchError::Workspace {
                path: ".".into(),
                why: format!("(the current directory) cannot be used: {e}"),
            })?,
        };
        if folders.is_empty() {
            folders.push(root.clone());
        }
        // The demo's sessions live only as long as the bridge: its state goes to a
        // temporary directory (removed at exit) unless one is named.
        let demo_state = match (&args.state_dir, args.engine) {
            (None, EngineKind::Demo) => Some(tempfile::tempdir().map_err(LaunchError::Demo)?),
            _ => None,
        };
        let state_dir = match (&args.state_dir, &demo_state) {
            (Some(dir), _) => dir.clone(),
            (None, Some(temp)) => temp.path().to_path_buf(),
            (None, None) => root.join(".bb-bridge").join("state"),
        };
        let mut demo = None;
        let breadboard_url = match args.engine {
            EngineKind::Demo => {
                let running = demo_engine(root.clone()).await.map_err(LaunchError::Demo)?;
                tracing::info!(
                    url = running.url(),
                    "demo engine (offline fake BreadBoard) serving"
                );
                let url = running.url().to_owned();
                demo = Some(running);
                let config = Some(args.engine_config.clone().unwrap_or_else(|| "demo".into()));
                Some((url, config))
            }
            EngineKind::Breadboard => {
                let Some(url) = args.engine_url.clone() else {
                    return Err(LaunchError::Missing(
                        "--engine breadboard needs --engine-url URL (or use --engine demo)",
                    ));
                };
                Some((url, args.engine_config.clone()))
            }
            EngineKind::Kilo | EngineKind::Acp => None,
        };
        Ok(Self {
            args,
            root,
            folders,
            state_dir,
            breadboard_url,
            _demo: demo,
            _demo_state: demo_state,
            pace,
        })
    }

    /// The engine flags this launcher was built from.
    pub fn args(&self) -> &EngineArgs {
        &self.args
    }

    /// The workspace root: `--workspace` canonicalized, else the current directory.
    pub fn workspace_root(&self) -> &std::path::Path {
        &self.root
    }

    /// The workspace folders, canonical, the default (the workspace root) first.
    pub fn folders(&self) -> &[PathBuf] {
        &self.folders
    }

    /// The service settings the flags imply: `--trusted` and `--permission-timeout` are the
    /// host's, for every engine; the folders are the ones `bb.init` lists.
    pub fn service_config(&self) -> ServiceConfig {
        let defaults = ServiceConfig::default();
        ServiceConfig {
            stop_grace: Duration::from_secs(self.args.stop_grace),
            folders: self.folders.iter().map(|f| f.display().to_string()).collect(),
            state_dir: Some(self.state_dir.clone()),
            pace: self.pace.clone(),
            host: HostConfig {
                trusted: self.args.trusted,
                prompt_ttl: self.args.permission_timeout.map(Duration::from_secs),
                ..defaults.host
            },
            ..defaults
        }
    }

    /// Builds an engine adapter for the configured engine (attaching to it when it runs
    /// elsewhere; in spawn mode the returned supervision starts it).
    pub async fn engine(&self) -> Result<EngineParts, LaunchError> {
        if self.folders.len() > 1 {
            return self.multi_root().await;
        }
        if self.args.engine == EngineKind::Acp {
            return self.acp().await;
        }
        match &self.breadboard_url {
            Some((url, config)) => self.breadboard(url, config.clone(), self.state_dir.clone()),
            None => self.kilo().await,
        }
    }

    fn breadboard(
        &self,
        url: &str,
        config: Option<String>,
        state_dir: PathBuf,
    ) -> Result<EngineParts, LaunchError> {
        // The demo works in the project directory; a real engine gets a workspace only when one
        // is named (without it, its files routes answer "workspace not ready").
        let workspace = match self.args.engine {
            EngineKind::Demo => Some(self.root.clone()),
            _ => self.args.workspace.as_ref().map(|_| self.root.clone()),
        };
        let (adapter, updates) = breadboard_adapter(&self.args, url, config, state_dir, workspace)?;
        Ok(EngineParts { adapter, updates, supervision: None })
    }

    async fn kilo(&self) -> Result<EngineParts, LaunchError> {
        let (adapter, updates) = KiloAdapter::with_options(self.kilo_options());
        let adapter: Arc<dyn EngineAdapter> = adapter;
        let supervision = self.kilo_engine(&adapter).await?;
        Ok(EngineParts { adapter, updates, supervision })
    }

    /// The Kilo adapter's settings for the workspace root; its credential store is checked.
    fn kilo_options(&self) -> KiloOptions {
        let env: Vec<(String, String)> = std::env::vars().collect();
        let data_dir = bb_kilo::credentials::data_dir(|name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
        });
        KiloOptions { workspace: Some(self.root.clone()), data_dir, ..KiloOptions::default() }
    }

    /// Attaches `adapter` to the Kilo server at `--engine-url`, or builds the supervision that
    /// starts one `kilo serve` in the workspace root.
    async fn kilo_engine(
        &self,
        adapter: &Arc<dyn EngineAdapter>,
    ) -> Result<Option<Supervision>, LaunchError> {
        let args = &self.args;
        if let Some(url) = &args.engine_url {
            let password = match &args.engine_password_env {
                Some(var) => Some(secret_env(var)?),
                None => None,
            };
            let endpoint = EngineEndpoint {
                base_url: url.clone(),
                username: args.engine_username.clone(),
                password,
            };
            adapter.reconnect(endpoint.into()).await.map_err(LaunchError::Attach)?;
            return Ok(None);
        }
        if args.workspace.is_none() && args.folders.is_empty() {
            return Err(LaunchError::Missing(
                "--workspace DIR is required when the bridge spawns the engine (or give --engine-url)",
            ));
        }
        let program = args.engine_bin.clone().unwrap_or_else(|| PathBuf::from("kilo"));
        // A missing binary is a clear error now, not a crash loop later.
        if find_executable(&program).is_none() {
            return Err(LaunchError::EngineBinary(program));
        }
        let mut kilo = KiloConfig::new(program, self.root.clone());
        kilo.parent_env = std::env::vars_os().collect();
        kilo.start_timeout = Duration::from_secs(args.start_timeout);
        kilo.stop_grace = Duration::from_secs(args.stop_grace);
        let supervisor =
            KiloSupervisor::new(kilo, Arc::new(TokioSpawner::default()), Arc::new(KiloProbe));
        Ok(Some(Supervision::new(Arc::new(supervisor))))
    }

    /// Several folders: one adapter per folder behind [`Folders`], each started on its
    /// folder's first session. Kilo: one server, each folder's adapter scoped to its project
    /// `directory` (its requests and its event stream). The demo: one in-process engine per
    /// folder. BreadBoard: one adapter per folder on the one engine, sessions created in the
    /// folder. ACP: one agent per folder, its cwd the folder.
    async fn multi_root(&self) -> Result<EngineParts, LaunchError> {
        let state_dir = self.state_dir.clone();
        // The default folder keeps the state directory; each other one a subdirectory.
        let state_of = move |index: usize| match index {
            0 => state_dir.clone(),
            _ => state_dir.join(format!("folder-{index}")),
        };
        let factory: FolderFactory = match self.args.engine {
            EngineKind::Kilo => {
                let base = self.kilo_options();
                Arc::new(move |index, folder: PathBuf| {
                    let mut options = base.clone();
                    // The credential store is the server's: checked once.
                    if index > 0 {
                        options.data_dir = None;
                    }
                    options.directory = Some(folder.display().to_string());
                    options.workspace = Some(folder);
                    Box::pin(async move {
                        let (adapter, updates) = KiloAdapter::with_options(options);
                        Ok(FolderEngine { adapter, updates, keep: None })
                    })
                })
            }
            EngineKind::Demo | EngineKind::Breadboard => {
                let Some((url, config)) = self.breadboard_url.clone() else {
                    return Err(LaunchError::Missing("--engine breadboard needs --engine-url URL"));
                };
                let args = self.args.clone();
                Arc::new(move |index, folder: PathBuf| {
                    let (args, url, config, state) =
                        (args.clone(), url.clone(), config.clone(), state_of(index));
                    Box::pin(async move {
                        let (url, keep) = match args.engine {
                            EngineKind::Demo if index > 0 => {
                                let running = demo_engine(folder.clone()).await.map_err(|e| {
                                    EngineError::Unavailable(format!("the demo engine: {e}"))
                                })?;
                                let url = running.url().to_owned();
                                (url, Some(Box::new(running) as Box<dyn Any + Send + Sync>))
                            }
                            _ => (url, None),
                        };
                        let (adapter, updates) =
                            breadboard_adapter(&args, &url, config, state, Some(folder))
                                .map_err(|e| EngineError::Unavailable(e.to_string()))?;
                        Ok(FolderEngine { adapter, updates, keep })
                    })
                })
            }
            EngineKind::Acp => {
                self.acp_command()?;
                let (command, trusted) = (self.args.agent_command.clone(), self.args.trusted);
                Arc::new(move |index, folder: PathBuf| {
                    let (command, state) = (command.clone(), state_of(index));
                    Box::pin(async move {
                        let policy = bb_acp::LaunchPolicy::from_process_env(folder, trusted);
                        let spawner = Arc::new(TokioSpawner::default());
                        let (adapter, updates) = bb_acp::sidebar::AcpAdapter::start(
                            policy,
                            spawner,
                            command,
                            Some(state),
                        )
                        .await?;
                        Ok(FolderEngine { adapter, updates, keep: None })
                    })
                })
            }
        };
        let (folders, updates) =
            Folders::start(self.folders.clone(), factory).await.map_err(LaunchError::Attach)?;
        let adapter: Arc<dyn EngineAdapter> = folders;
        let supervision = match self.args.engine {
            EngineKind::Kilo => self.kilo_engine(&adapter).await?,
            _ => None,
        };
        Ok(EngineParts { adapter, updates, supervision })
    }
}

impl Launcher {
    /// `--engine acp` needs the agent's command.
    fn acp_command(&self) -> Result<(), LaunchError> {
        if self.args.agent_command.first().is_none_or(String::is_empty) {
            return Err(LaunchError::Missing(
                "--engine acp needs the agent command after `--`, e.g. `--engine acp -- kilo acp`",
            ));
        }
        Ok(())
    }

    /// `--engine acp -- CMD…`: the agent is started (and `initialize`d) now, in the
    /// workspace; it is not restarted when it exits (the webview sees `bb/connection` error).
    async fn acp(&self) -> Result<EngineParts, LaunchError> {
        self.acp_command()?;
        let policy = bb_acp::LaunchPolicy::from_process_env(self.root.clone(), self.args.trusted);
        let (adapter, updates) = bb_acp::sidebar::AcpAdapter::start(
            policy,
            Arc::new(TokioSpawner::default()),
            self.args.agent_command.clone(),
            Some(self.state_dir.clone()),
        )
        .await
        .map_err(LaunchError::Attach)?;
        Ok(EngineParts { adapter, updates, supervision: None })
    }
}

/// The workspace `given`, canonical, when it is an existing directory.
fn workspace_dir(given: &std::path::Path) -> Result<PathBuf, LaunchError> {
    let refused = |why: String| LaunchError::Workspace { path: given.to_path_buf(), why };
    let root = std::fs::canonicalize(given).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => refused("does not exist".into()),
        std::io::ErrorKind::NotADirectory => refused("is below a file, not a directory".into()),
        _ => refused(format!("cannot be used ({e})")),
    })?;
    if !root.is_dir() {
        return Err(refused("is a file, not a directory".into()));
    }
    Ok(root)
}

/// The executable a spawn of `program` would run: a path with a `/` as given, else the first
/// match on `PATH`.
fn find_executable(program: &std::path::Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 {
        return runnable(program).then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|p| runnable(p))
}

fn secret_env(var: &str) -> Result<SecretString, LaunchError> {
    std::env::var(var)
        .map(SecretString::from)
        .map_err(|source| LaunchError::SecretEnv { var: var.to_owned(), source })
}

/// A BreadBoard adapter of the engine at `url`, its sessions created in `workspace`.
fn breadboard_adapter(
    args: &EngineArgs,
    url: &str,
    config: Option<String>,
    state_dir: PathBuf,
    workspace: Option<PathBuf>,
) -> Result<(Arc<dyn EngineAdapter>, InputReceiver), LaunchError> {
    let auth = match (&args.engine_token_env, args.engine) {
        (Some(var), EngineKind::Breadboard) => EngineAuth::Bearer(secret_env(var)?),
        _ => EngineAuth::None,
    };
    let transport = HttpTransport::new(url, auth, HttpOptions::default())
        .map_err(|e| LaunchError::EngineUrl(e.to_string()))?;
    let mut bb = BreadboardConfig::new(state_dir);
    bb.default_config_path = config;
    bb.workspace = workspace;
    let client = BreadboardClient::new(Arc::new(transport));
    let (adapter, updates) = BreadboardAdapter::new(client, bb, Arc::new(SystemClock));
    Ok((adapter as Arc<dyn EngineAdapter>, updates))
}

/// The in-process demo engine (a fake BreadBoard playing the recorded turn) for `workspace`,
/// on a loopback port.
async fn demo_engine(workspace: PathBuf) -> std::io::Result<RunningEngine> {
    let engine = FakeEngine::new(EngineConfig {
        default_workspace: workspace,
        scripts: vec![ScriptSource::Inline(DEMO_TURN.to_owned())],
        ..EngineConfig::default()
    });
    engine.serve(([127, 0, 0, 1], 0).into()).await
}
