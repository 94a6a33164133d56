//! Engine process supervision: spawning an engine for a workspace through the process spawner
//! port, health checks, restart with back-off and the crash-loop breaker.
//!
//! IO contract: spawns and signals processes through the process spawner port only; the
//! health check goes through the [`HealthProbe`] port (implemented over HTTP by the service),
//! so this crate never speaks HTTP and never reads the clock (`now` is passed in).
//!
//! # Choices
//!
//! * **Port discovery.** The engine is started with `--port 0 --hostname 127.0.0.1` and the
//!   supervisor reads the URL the engine itself prints (`kilo server listening on
//!   http://127.0.0.1:PORT`). Kilo 7.7.9 tries 4096 first for `--port 0` and falls back to a
//!   random port; either way the engine binds the socket itself and reports it, so there is
//!   no bind-and-release race. A URL that is not loopback is refused.
//! * **Secrets.** A fresh 256-bit password per start, held as a [`secrecy::SecretString`],
//!   set as `KILO_SERVER_PASSWORD` in the child's environment (never argv) and redacted from
//!   every engine log line.
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
pub mod kilo;
pub mod redact;
pub mod restart;
pub mod spawn;
pub mod tokio_spawner;

pub use kilo::{HealthProbe, KiloConfig, KiloSupervisor, ProbeError, RunningEngine, StartError};
pub use restart::{CrashHistory, RestartDecision, RestartPolicy};
#[cfg(any(test, feature = "mock"))]
pub use spawn::MockProcessSpawner;
pub use spawn::{
    ChildStdio, EngineProcess, ExitInfo, OutputLine, OutputStream, ProcessSpawner, SpawnSpec,
};
pub use tokio_spawner::TokioSpawner;

#[cfg(test)]
mod tests;
