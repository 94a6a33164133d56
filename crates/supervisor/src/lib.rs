//! Engine process supervision, for every engine: spawning an engine or agent through the
//! process spawner port (explicit cwd, environment allow-list, own process group, death
//! signal, group guard), redacting its output, and the restart policy with its crash-loop
//! breaker. What starting a particular engine means (its flags, how it says where it
//! listens, its health check) lives in that engine's crate (`bb-kilo`).
//!
//! IO contract: spawns and signals processes through the process spawner port only; never
//! speaks HTTP and never reads the clock (`now` is passed in).
//!
//! # Choices
//!
//! * **Secrets.** A secret for the child (a password) is a [`secrecy::SecretString`] set in
//!   its environment ([`SpawnSpec::secret_env`], never argv) and redacted from every line of
//!   its output.
//! * **Environment.** The child's environment is cleared, then exactly the allow-list of
//!   [`env::inherit_allowed`] is copied from the parent (`PATH`, `HOME`, `XDG_*`, `LANG`,
//!   `LC_*`, `TZ`, `KILO_*` minus the server credentials), then the caller's explicit extra
//!   variables (the user's engine configuration), then the secret.
//! * **No orphans.** The engine runs in its own process group (shutdown signals the group:
//!   TERM, then KILL after a grace period) and gets `PR_SET_PDEATHSIG(SIGKILL)` on Linux, so
//!   it dies with the thread that spawned it even when the bridge is killed with SIGKILL. The
//!   death signal is tied to the spawning *thread*: spawn from a thread that lives as long as
//!   the engine should (a tokio worker or the main thread, never a short-lived blocking
//!   thread). What the engine starts is reached by a *group guard* spawned with it (module
//!   `guard`): a `/bin/sh` in a group of its own reading a pipe only the bridge holds. When the
//!   bridge dies (SIGKILL included) the pipe closes and the guard SIGKILLs the engine's group
//!   and then every process carrying the engine's per-spawn marker variable
//!   [`tokio_spawner::MARKER_VAR`] — needed because Kilo 7.7.9 starts its shell tools
//!   detached, in a session and group of their own. After the engine is reaped (orderly stop
//!   or crash) the group is swept by the bridge and the guard is told to sweep the marked
//!   processes only, never a group id that may have been reused. Only a descendant that left
//!   the group *and* dropped its environment (`env -i`) escapes.
//! * **Restarts.** [`restart::CrashHistory`] counts crashes in a sliding window: below the
//!   limit it answers a doubling back-off delay, at the limit it opens the breaker and the
//!   supervisor stops and reports instead of looping.

pub mod env;
mod guard;
pub mod redact;
pub mod restart;
pub mod spawn;
pub mod tokio_spawner;

pub use restart::{CrashHistory, RestartDecision, RestartPolicy};
#[cfg(any(test, feature = "mock"))]
pub use spawn::MockProcessSpawner;
pub use spawn::{
    ChildStdio, EngineProcess, ExitInfo, OutputLine, OutputStream, ProcessSpawner, SpawnSpec,
};
pub use tokio_spawner::TokioSpawner;

#[cfg(test)]
mod tests;
