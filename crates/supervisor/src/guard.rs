//! The group guard: a tiny `/bin/sh` that outlives the bridge just long enough to SIGKILL
//! everything the engine started when the bridge dies for any reason (SIGKILL included).
//!
//! The guard runs in a process group of its own (never inside the group it guards) and blocks
//! reading its stdin, a pipe whose only write end the bridge holds (close-on-exec, so no engine
//! inherits it). When the bridge exits, the kernel closes that end, the guard's `read` sees end
//! of file and it
//!
//! 1. runs `kill -9 -PGID` on the engine's process group, then
//! 2. SIGKILLs every process whose environment holds the engine's marker variable
//!    ([`MARKER_VAR`]`=<random per spawn>`, set in the engine's environment and inherited by
//!    what it starts), repeating the `/proc` scan until a pass finds none (at most 50 passes),
//!    so a process forked during a pass is caught by the next one (reads `/proc`: Linux).
//!
//! Step 2 exists because the Kilo engine starts its shell tools *detached* (`setsid`: a
//! session and process group of their own), out of reach of the group signal. The marker
//! misses only a process that rebuilds its environment from scratch (`env -i`) after leaving
//! the group. The scan needs a `grep` with `-z` (GNU grep); without one only step 1 runs.
//!
//! Once the engine has exited and was reaped (orderly stop or crash), the bridge writes `sweep`
//! to the pipe: the guard skips step 1 (the group id may be reused from then on; the bridge
//! has already swept the group) and runs step 2 only, so detached tools do not outlive an
//! orderly stop either. If the guard cannot be told (the write fails), it is SIGKILLed before
//! its pipe closes, so it never signals a group id the system may have reused.

use std::fs::File;
use std::io::{self, Write};
use std::process::Stdio;

use tokio::process::{Child, Command};

/// The guard's interpreter.
pub(crate) const GUARD_SHELL: &str = "/bin/sh";
/// The environment variable marking the engine and everything it starts (a fresh random
/// value per spawn; not a secret).
pub const MARKER_VAR: &str = "BB_ENGINE_GUARD";
/// The guard's script: `$0` is the process group id, `$1` the marker entry `NAME=VALUE`.
/// `kill -9 -PGID` is the form POSIX shells agree on (dash rejects `--` before it).
const GUARD_SCRIPT: &str = r#"read cmd
[ "$cmd" = sweep ] || kill -9 -"$0" 2>/dev/null
i=0
while [ "$i" -lt 50 ]; do
  found=
  for f in $(grep -lzxF -e "$1" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}
    kill -9 "${p%/environ}" 2>/dev/null && found=1
  done
  [ -n "$found" ] || exit 0
  i=$((i + 1))
done"#;

/// A running guard; dropping it without a successful [`GroupGuard::sweep`] disarms it
/// (SIGKILL, then the pipe closes).
#[derive(Debug)]
pub(crate) struct GroupGuard {
    child: Child,
    pid: Option<u32>,
    /// The write end of the guard's stdin: closed when the bridge dies, `sweep` on request.
    pipe: File,
    /// Told to sweep: left to finish on its own instead of being disarmed on drop.
    swept: bool,
}

impl GroupGuard {
    /// Starts a guard for process group `pgid` and the processes whose environment holds
    /// `MARKER_VAR=marker`, from `cmd`, a fresh `Command` of [`GUARD_SHELL`] (built by the
    /// spawner port's adapter function). The guard's own environment is empty, so it never
    /// matches itself.
    pub(crate) fn start(mut cmd: Command, pgid: u32, marker: &str) -> io::Result<Self> {
        cmd.arg("-c")
            .arg(GUARD_SCRIPT)
            .arg(pgid.to_string())
            .arg(format!("{MARKER_VAR}={marker}"))
            .current_dir("/")
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(false)
            .process_group(0);
        let mut child = cmd.spawn()?;
        let pid = child.id();
        let pipe = child.stdin.take().ok_or_else(|| {
            io::Error::new(io::ErrorKind::BrokenPipe, "the group guard has no stdin pipe")
        })?;
        let pipe = File::from(pipe.into_owned_fd()?);
        tracing::debug!(guard = pid, pgid, "engine group guard started");
        Ok(Self { child, pid, pipe, swept: false })
    }

    /// The engine has exited and was reaped: the guard kills the marked processes left (not
    /// the group) and exits by itself; the runtime reaps it. If it cannot be told, it is
    /// disarmed instead.
    pub(crate) fn sweep(mut self) {
        // Six bytes into an empty pipe never block, even on a non-blocking descriptor.
        match self.pipe.write_all(b"sweep\n") {
            Ok(()) => {
                tracing::debug!(guard = self.pid, "engine group guard sweeping");
                self.swept = true;
            }
            Err(err) => {
                tracing::warn!(guard = self.pid, %err, "cannot ask the engine group guard to sweep");
            }
        }
    }

    /// Stops the guard without it firing: SIGKILL while its pipe is still open. The process
    /// is reaped by the runtime once the handle is dropped.
    fn disarm(&mut self) {
        if let Err(err) = self.child.start_kill()
            && err.kind() != io::ErrorKind::InvalidInput
        {
            tracing::warn!(guard = self.pid, %err, "stopping the engine group guard failed");
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // Fields drop after this body: the kill is sent before the pipe closes.
        if !self.swept {
            self.disarm();
        }
    }
}

/// A fresh marker value: 128 random bits, hex encoded.
pub(crate) fn new_marker() -> String {
    let bits: u128 = rand::random();
    format!("{bits:032x}")
}
