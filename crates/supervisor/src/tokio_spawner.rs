//! `TokioSpawner`: the process spawner port over `tokio::process` (the one place a process is
//! created), with its own process group, a parent-death signal, a group guard that kills the
//! group when the bridge dies, and engine output forwarded to `tracing` redacted and
//! line-capped.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

pub use crate::guard::MARKER_VAR;
use crate::guard::{GUARD_SHELL, GroupGuard, new_marker};
use crate::redact::LineRedactor;
use crate::spawn::{
    ChildStdio, EngineProcess, ExitInfo, OutputLine, OutputStream, ProcessSpawner, SpawnSpec,
};

/// Default cap on one engine log line, in bytes.
pub const DEFAULT_MAX_LINE: usize = 8 * 1024;
/// Lines buffered for [`EngineProcess::next_line`]; later lines are only logged.
const LINE_QUEUE: usize = 1024;

/// Spawns engine processes with `tokio::process`. Must be called inside a tokio runtime.
#[derive(Debug, Clone)]
pub struct TokioSpawner {
    max_line: usize,
}

impl Default for TokioSpawner {
    fn default() -> Self {
        Self { max_line: DEFAULT_MAX_LINE }
    }
}

impl TokioSpawner {
    /// A spawner whose log lines are capped at `max_line` bytes.
    pub fn with_max_line(max_line: usize) -> Self {
        Self { max_line: max_line.max(16) }
    }
}

impl ProcessSpawner for TokioSpawner {
    fn spawn(&self, spec: SpawnSpec) -> io::Result<Box<dyn EngineProcess>> {
        self.start(spec, false)
    }

    fn spawn_stdio(&self, spec: SpawnSpec) -> io::Result<Box<dyn EngineProcess>> {
        self.start(spec, true)
    }
}

impl TokioSpawner {
    /// Starts the process; with `piped_stdio` its stdin/stdout are kept for
    /// [`EngineProcess::take_stdio`] instead of stdin being null and stdout logged.
    #[allow(clippy::disallowed_methods)] // the process spawner port's one adapter function
    fn start(&self, spec: SpawnSpec, piped_stdio: bool) -> io::Result<Box<dyn EngineProcess>> {
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .current_dir(&spec.cwd)
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(if piped_stdio { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        for (name, value) in &spec.secret_env {
            cmd.env(name, value.expose_secret());
        }
        let marker = new_marker();
        cmd.env(MARKER_VAR, &marker);
        set_parent_death_signal(&mut cmd);
        let mut child = cmd.spawn()?;
        let pid = child.id();
        let guard = match pid {
            Some(pgid) => match GroupGuard::start(Command::new(GUARD_SHELL), pgid, &marker) {
                Ok(guard) => guard,
                Err(err) => {
                    // The engine must not run unguarded: take it down before reporting.
                    kill_group(pid, libc::SIGKILL);
                    return Err(io::Error::new(
                        err.kind(),
                        format!("cannot start the engine group guard {GUARD_SHELL}: {err}"),
                    ));
                }
            },
            None => return Err(io::Error::other("the engine exited before it could be guarded")),
        };
        let secrets: Vec<SecretString> = spec.secret_env.iter().map(|(_, v)| v.clone()).collect();
        let redactor = LineRedactor::new(secrets, self.max_line);
        let (tx, rx) = mpsc::channel(LINE_QUEUE);
        let stdio = if piped_stdio {
            match (child.stdin.take(), child.stdout.take()) {
                (Some(stdin), Some(stdout)) => {
                    Some(ChildStdio { stdin: Box::new(stdin), stdout: Box::new(stdout) })
                }
                _ => None,
            }
        } else {
            None
        };
        if let Some(out) = child.stdout.take() {
            tokio::spawn(pump(
                BufReader::new(out),
                OutputStream::Stdout,
                pid,
                redactor.clone(),
                tx.clone(),
                self.max_line,
            ));
        }
        if let Some(err) = child.stderr.take() {
            tokio::spawn(pump(
                BufReader::new(err),
                OutputStream::Stderr,
                pid,
                redactor,
                tx,
                self.max_line,
            ));
        }
        tracing::info!(pid, program = %spec.program.display(), cwd = %spec.cwd.display(), "engine process started");
        Ok(Box::new(TokioProcess { child, pid, lines: rx, exit: None, guard: Some(guard), stdio }))
    }
}

/// Linux: the child gets SIGKILL when the spawning thread dies (also on SIGKILL of the bridge).
/// If the parent is already gone by the time the child runs, the spawn fails instead.
#[cfg(target_os = "linux")]
fn set_parent_death_signal(cmd: &mut Command) {
    let parent = i32::try_from(std::process::id()).unwrap_or(0);
    // SAFETY: the closure runs in the forked child before exec and only calls the
    // async-signal-safe `prctl` and `getppid`, building errors without allocating.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn set_parent_death_signal(_cmd: &mut Command) {}

/// Reads one stream line by line until EOF: redact, cap, log, forward.
async fn pump<R: AsyncBufRead + Unpin>(
    mut reader: R,
    stream: OutputStream,
    pid: Option<u32>,
    redactor: LineRedactor,
    tx: mpsc::Sender<OutputLine>,
    max_line: usize,
) {
    // Read a little past the cap so a secret straddling the cap is still recognised whole.
    let read_cap = max_line.saturating_add(512);
    let mut buf = Vec::new();
    loop {
        match read_capped_line(&mut reader, &mut buf, read_cap).await {
            Ok(Some(dropped)) => {
                let text = redactor.apply(&buf, dropped);
                match stream {
                    OutputStream::Stdout => {
                        tracing::info!(target: "bb_engine", pid, stream = "stdout", "{text}")
                    }
                    OutputStream::Stderr => {
                        tracing::info!(target: "bb_engine", pid, stream = "stderr", "{text}")
                    }
                }
                // A full queue only means nobody is waiting for lines: the log has it.
                let _ = tx.try_send(OutputLine { stream, text });
            }
            Ok(None) => break,
            Err(err) => {
                tracing::warn!(pid, ?stream, %err, "reading engine output failed");
                break;
            }
        }
    }
}

/// Reads one line into `buf` (without `\n` / `\r\n`), keeping at most `cap` bytes and
/// discarding the rest of the line. Returns the count of discarded bytes, `None` at EOF.
pub(crate) async fn read_capped_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<usize>> {
    buf.clear();
    let mut dropped = 0usize;
    let mut any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(any.then_some(dropped));
        }
        any = true;
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.unwrap_or(available.len());
        let keep = take.min(cap.saturating_sub(buf.len()));
        buf.extend_from_slice(&available[..keep]);
        dropped += take - keep;
        let consumed = newline.map_or(available.len(), |p| p + 1);
        reader.consume(consumed);
        if newline.is_some() {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Some(dropped));
        }
    }
}

#[derive(Debug)]
struct TokioProcess {
    child: Child,
    pid: Option<u32>,
    lines: mpsc::Receiver<OutputLine>,
    exit: Option<ExitInfo>,
    /// Kills the group and the marked processes if the bridge dies; `None` once told to sweep.
    guard: Option<GroupGuard>,
    /// The stdin/stdout pipes of a `spawn_stdio` process until taken.
    stdio: Option<ChildStdio>,
}

/// Signals the process group `pid` leads (`process_group(0)` makes the child's pid its group id).
fn kill_group(pid: Option<u32>, signal: i32) {
    let Some(pgid) = pid.and_then(|p| i32::try_from(p).ok()) else { return };
    // SAFETY: `kill` with a negative pid signals the process group we created for the child.
    let rc = unsafe { libc::kill(-pgid, signal) };
    if rc == -1 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ESRCH) {
            tracing::warn!(pgid, signal, %err, "signalling the engine process group failed");
        }
    }
}

impl TokioProcess {
    fn signal_group(&self, signal: i32) {
        kill_group(self.pid, signal);
    }

    /// The engine has exited and was reaped: sweep whatever it left in its group, then have
    /// the guard sweep the marked processes that left the group (detached tools).
    fn record(&mut self, status: ExitStatus) -> ExitInfo {
        use std::os::unix::process::ExitStatusExt;
        let info = ExitInfo { code: status.code(), signal: status.signal() };
        if self.exit.is_none() {
            tracing::info!(pid = self.pid, status = %info, "engine process exited");
            self.signal_group(libc::SIGKILL);
        }
        if let Some(guard) = self.guard.take() {
            guard.sweep();
        }
        self.exit = Some(info);
        info
    }
}

#[async_trait]
impl EngineProcess for TokioProcess {
    fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn take_stdio(&mut self) -> Option<ChildStdio> {
        self.stdio.take()
    }

    async fn next_line(&mut self) -> Option<OutputLine> {
        self.lines.recv().await
    }

    async fn wait(&mut self) -> io::Result<ExitInfo> {
        if let Some(info) = self.exit {
            return Ok(info);
        }
        let status = self.child.wait().await?;
        Ok(self.record(status))
    }

    async fn terminate(&mut self, grace: Duration) -> io::Result<ExitInfo> {
        if let Some(info) = self.exit {
            return Ok(info);
        }
        if let Some(status) = self.child.try_wait()? {
            return Ok(self.record(status));
        }
        self.signal_group(libc::SIGTERM);
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status?,
            Err(_elapsed) => {
                tracing::warn!(pid = self.pid, ?grace, "engine ignored SIGTERM; sending SIGKILL");
                self.signal_group(libc::SIGKILL);
                self.child.wait().await?
            }
        };
        Ok(self.record(status))
    }
}

impl Drop for TokioProcess {
    fn drop(&mut self) {
        if self.exit.is_none() {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.record(status);
                }
                _ => self.signal_group(libc::SIGKILL),
            }
        }
        // Then the marked processes outside the group (the group itself is handled above).
        if let Some(guard) = self.guard.take() {
            guard.sweep();
        }
    }
}
