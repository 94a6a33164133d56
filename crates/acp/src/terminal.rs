//! The client's `terminal/*` capability: commands an agent runs through the bridge, behind
//! the workspace's trust, in the workspace, each in its own process group (the supervisor's
//! spawner: allow-listed environment, death signal, group guard). Output is kept up to the
//! agent's byte limit (oldest bytes dropped) and reported line by line as it arrives; every
//! terminal of a session is killed when its turn is cancelled, all of them when the
//! connection closes.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::v1::schema::{CreateTerminalRequest, TerminalExitStatus};
use bb_supervisor::{EngineProcess, ExitInfo, ProcessSpawner, SpawnSpec};
use tokio::sync::{mpsc, watch};

use crate::event::{AcpEvent, AcpEventKind};
use crate::fs::inside;

/// Output kept per terminal when the agent names no `outputByteLimit`.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;
/// Grace between SIGTERM and SIGKILL when a terminal is killed.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// What a terminal printed so far.
#[derive(Debug, Default)]
pub(crate) struct Output {
    pub(crate) text: String,
    pub(crate) truncated: bool,
    pub(crate) limit: usize,
}

impl Output {
    /// Appends a line; past the limit the oldest bytes go (on a char boundary).
    pub(crate) fn push(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
        if self.text.len() > self.limit {
            let mut cut = self.text.len() - self.limit;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
            self.truncated = true;
        }
    }
}

#[derive(Debug)]
struct Term {
    session: String,
    out: Mutex<Output>,
    exit: watch::Receiver<Option<ExitInfo>>,
    kill: mpsc::Sender<()>,
}

/// Where and how terminals run.
#[derive(Debug, Clone)]
pub(crate) struct TerminalEnv {
    pub(crate) spawner: Arc<dyn ProcessSpawner>,
    pub(crate) workspace: PathBuf,
    pub(crate) inherited_env: Vec<(OsString, OsString)>,
}

/// The terminals of one connection.
#[derive(Debug)]
pub(crate) struct Terminals {
    env: TerminalEnv,
    conn_id: String,
    events: mpsc::Sender<AcpEvent>,
    next: AtomicU64,
    map: Mutex<HashMap<String, Arc<Term>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The ACP exit status of a process.
pub(crate) fn exit_status(info: ExitInfo) -> TerminalExitStatus {
    let signal = info.signal.map(|s| match s {
        2 => "SIGINT".to_owned(),
        9 => "SIGKILL".to_owned(),
        15 => "SIGTERM".to_owned(),
        n => format!("signal {n}"),
    });
    TerminalExitStatus::new()
        .exit_code(info.code.and_then(|c| u32::try_from(c).ok()))
        .signal(signal)
}

impl Terminals {
    pub(crate) fn new(env: TerminalEnv, conn_id: String, events: mpsc::Sender<AcpEvent>) -> Self {
        Self { env, conn_id, events, next: AtomicU64::new(1), map: Mutex::default() }
    }

    fn get(&self, session: &str, id: &str) -> Result<Arc<Term>, agent_client_protocol::Error> {
        match lock(&self.map).get(id) {
            Some(t) if t.session == session => Ok(t.clone()),
            _ => Err(agent_client_protocol::Error::new(
                -32002,
                format!("no terminal {id} in session {session} (released, or never created)"),
            )),
        }
    }

    /// `terminal/create`: starts the command (trust is checked by the caller).
    pub(crate) fn create(
        &self,
        req: &CreateTerminalRequest,
    ) -> Result<String, agent_client_protocol::Error> {
        let invalid = |m: String| agent_client_protocol::Error::new(-32602, m);
        let cwd = match &req.cwd {
            Some(c) => inside(&self.env.workspace, c).map_err(|e| e.to_rpc())?,
            None => self.env.workspace.clone(),
        };
        if !cwd.is_dir() {
            return Err(invalid(format!("terminal cwd {} is not a directory", cwd.display())));
        }
        if req.command.trim().is_empty() || req.command.contains('\0') {
            return Err(invalid("terminal/create needs a command".to_owned()));
        }
        let mut env = self.env.inherited_env.clone();
        for var in &req.env {
            crate::spawn::check_env_name(&var.name).map_err(|e| invalid(e.to_string()))?;
            env.retain(|(k, _)| k.to_str() != Some(var.name.as_str()));
            env.push((var.name.clone().into(), var.value.clone().into()));
        }
        // A bare command line without arguments is run by the shell, as a terminal would.
        let (program, args) = if req.args.is_empty()
            && req
                .command
                .contains(|c: char| c.is_whitespace() || "|&;<>()$`\\\"'*?[]#~=%".contains(c))
        {
            (PathBuf::from("/bin/sh"), vec![OsString::from("-c"), OsString::from(&req.command)])
        } else {
            let program = crate::spawn::find_program(&req.command, &cwd, &env)
                .map_err(|e| invalid(e.to_string()))?;
            (program, req.args.iter().map(OsString::from).collect())
        };
        let spec = SpawnSpec { program, args, cwd, env, secret_env: Vec::new() };
        let process = self.env.spawner.spawn(spec).map_err(|e| {
            agent_client_protocol::Error::new(-32603, format!("cannot start {}: {e}", req.command))
        })?;
        let id = format!("term-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let limit = req
            .output_byte_limit
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(DEFAULT_OUTPUT_LIMIT);
        let (exit_tx, exit) = watch::channel(None);
        let (kill, kill_rx) = mpsc::channel(1);
        let term = Arc::new(Term {
            session: req.session_id.to_string(),
            out: Mutex::new(Output { limit, ..Output::default() }),
            exit,
            kill,
        });
        lock(&self.map).insert(id.clone(), term.clone());
        tokio::spawn(run(
            process,
            term,
            kill_rx,
            exit_tx,
            self.events.clone(),
            self.conn_id.clone(),
            id.clone(),
        ));
        Ok(id)
    }

    /// `terminal/output`: what it printed so far, and its exit once it exited.
    pub(crate) fn output(
        &self,
        session: &str,
        id: &str,
    ) -> Result<(String, bool, Option<ExitInfo>), agent_client_protocol::Error> {
        let t = self.get(session, id)?;
        let exit = *t.exit.borrow();
        let out = lock(&t.out);
        Ok((out.text.clone(), out.truncated, exit))
    }

    /// `terminal/wait_for_exit`.
    pub(crate) async fn wait(
        &self,
        session: &str,
        id: &str,
    ) -> Result<ExitInfo, agent_client_protocol::Error> {
        let t = self.get(session, id)?;
        let mut exit = t.exit.clone();
        let info = exit.wait_for(Option::is_some).await.map_err(|_| {
            agent_client_protocol::Error::new(
                -32603,
                format!("terminal {id} ended without an exit status"),
            )
        })?;
        Ok(info.unwrap_or(ExitInfo { code: None, signal: None }))
    }

    /// `terminal/kill`: kills it; the terminal stays for `output` until released.
    pub(crate) fn kill(&self, session: &str, id: &str) -> Result<(), agent_client_protocol::Error> {
        let t = self.get(session, id)?;
        let _ = t.kill.try_send(());
        Ok(())
    }

    /// `terminal/release`: kills it if it runs and forgets it.
    pub(crate) fn release(
        &self,
        session: &str,
        id: &str,
    ) -> Result<(), agent_client_protocol::Error> {
        let t = self.get(session, id)?;
        let _ = t.kill.try_send(());
        lock(&self.map).remove(id);
        Ok(())
    }

    /// Kills every terminal of a session (its turn was cancelled or it was closed).
    pub(crate) fn kill_session(&self, session: &str) -> usize {
        let map = lock(&self.map);
        let mut n = 0;
        for t in map.values().filter(|t| t.session == session) {
            if t.exit.borrow().is_none() {
                n += 1;
            }
            let _ = t.kill.try_send(());
        }
        n
    }

    /// Kills every terminal (the connection closes).
    pub(crate) fn kill_all(&self) {
        for t in lock(&self.map).drain().map(|(_, t)| t) {
            let _ = t.kill.try_send(());
        }
    }
}

/// Owns one terminal's process: reads its output, kills it when told, records its exit.
async fn run(
    mut process: Box<dyn EngineProcess>,
    term: Arc<Term>,
    mut kill: mpsc::Receiver<()>,
    exit: watch::Sender<Option<ExitInfo>>,
    events: mpsc::Sender<AcpEvent>,
    conn_id: String,
    id: String,
) {
    let mut killed = None;
    loop {
        tokio::select! {
            line = process.next_line() => {
                let Some(line) = line else { break };
                lock(&term.out).push(&line.text);
                let kind = AcpEventKind::TerminalOutput {
                    session_id: term.session.clone(),
                    terminal_id: id.clone(),
                    output: format!("{}\n", line.text),
                };
                let _ = events.send(AcpEvent { connection_id: conn_id.clone(), kind }).await;
            }
            Some(()) = kill.recv(), if killed.is_none() => {
                killed = Some(process.terminate(KILL_GRACE).await);
            }
        }
    }
    let info = match killed {
        Some(Ok(info)) => info,
        _ => process.wait().await.unwrap_or(ExitInfo { code: None, signal: None }),
    };
    let _ = exit.send(Some(info));
    let kind = AcpEventKind::TerminalExited {
        session_id: term.session.clone(),
        terminal_id: id,
        exit: serde_json::to_value(exit_status(info)).unwrap_or_default(),
    };
    let _ = events.send(AcpEvent { connection_id: conn_id, kind }).await;
}
