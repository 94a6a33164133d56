//! The process spawner port: what a spawn needs (`SpawnSpec`) and what a running engine
//! process offers (`EngineProcess`).

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use secrecy::SecretString;
use tokio::io::{AsyncRead, AsyncWrite};

/// Everything needed to start one engine process. The child's environment is cleared first;
/// it receives exactly `env` and `secret_env`, nothing else from the parent.
pub struct SpawnSpec {
    /// The executable.
    pub program: PathBuf,
    /// Arguments (never secrets).
    pub args: Vec<OsString>,
    /// The working directory of the child.
    pub cwd: PathBuf,
    /// Plain environment variables, already filtered through the allow-list.
    pub env: Vec<(OsString, OsString)>,
    /// Secret environment variables; exposed only while the child's environment is built.
    pub secret_env: Vec<(String, SecretString)>,
}

impl fmt::Debug for SpawnSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpawnSpec")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &self.env)
            .field(
                "secret_env",
                &self.secret_env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Which output stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    /// The child's stdout.
    Stdout,
    /// The child's stderr.
    Stderr,
}

/// One line of engine output, already redacted and capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLine {
    /// The stream it came from.
    pub stream: OutputStream,
    /// The line without its terminator.
    pub text: String,
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    /// The exit code, when it exited normally.
    pub code: Option<i32>,
    /// The signal that ended it, when it was killed.
    pub signal: Option<i32>,
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(sig)) => write!(f, "killed by signal {sig}"),
            (None, None) => f.write_str("unknown exit status"),
        }
    }
}

/// A running engine process.
#[async_trait]
pub trait EngineProcess: Send + fmt::Debug {
    /// The OS process id (also its process group id).
    fn pid(&self) -> Option<u32>;
    /// The next output line; `None` once both streams are closed.
    async fn next_line(&mut self) -> Option<OutputLine>;
    /// Waits for the process to exit (cancel safe).
    async fn wait(&mut self) -> io::Result<ExitInfo>;
    /// TERM to the process group, KILL to the group after `grace`; returns how it ended.
    async fn terminate(&mut self, grace: Duration) -> io::Result<ExitInfo>;
    /// The child's stdin and stdout, once, for a process started with
    /// [`ProcessSpawner::spawn_stdio`]; `None` otherwise (those lines go to
    /// [`EngineProcess::next_line`] instead).
    fn take_stdio(&mut self) -> Option<ChildStdio> {
        None
    }
}

/// The byte pipes of a process that speaks a protocol on its stdio (an ACP agent).
pub struct ChildStdio {
    /// Writes to the child's stdin.
    pub stdin: Box<dyn AsyncWrite + Send + Unpin>,
    /// Reads the child's stdout.
    pub stdout: Box<dyn AsyncRead + Send + Unpin>,
}

impl fmt::Debug for ChildStdio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildStdio").finish_non_exhaustive()
    }
}

/// Starts engine processes. With the `mock` feature (and in this crate's tests) mockall
/// generates `MockProcessSpawner`, for tests where the sequence of spawns is under test.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait ProcessSpawner: Send + Sync + fmt::Debug {
    /// Spawns one process as described.
    fn spawn(&self, spec: SpawnSpec) -> io::Result<Box<dyn EngineProcess>>;

    /// Spawns one process whose stdin and stdout are byte pipes for the caller
    /// ([`EngineProcess::take_stdio`]); stderr is logged as with [`ProcessSpawner::spawn`].
    /// Same group, death signal and guard. Spawners that cannot do this say so.
    fn spawn_stdio(&self, spec: SpawnSpec) -> io::Result<Box<dyn EngineProcess>> {
        let _ = spec;
        Err(io::Error::new(io::ErrorKind::Unsupported, "this spawner cannot pipe a child's stdio"))
    }
}
