//! The process watcher: owns the agent process, keeps the tail of its stderr, reaps it when it
//! exits on its own or stops it when told; then records why (exit status and redacted stderr
//! tail), drops what waits for the user, kills the terminals and reports `closed`.

use std::collections::VecDeque;
use std::time::Duration;

use bb_supervisor::{EngineProcess, OutputStream};
use serde_json::Map;
use tokio::sync::{oneshot, watch};

use crate::conn::{Ctx, STOP_GRACE, lock};
use crate::event::AcpEventKind;

/// Stderr lines kept for the report of an exit.
pub const STDERR_TAIL_LINES: usize = 20;
/// Characters of stderr tail a report carries at most.
pub const STDERR_TAIL_CHARS: usize = 1500;
/// How often the watcher checks for an exit while the agent's output stays open.
const EXIT_POLL: Duration = Duration::from_millis(250);

/// The last lines of the agent's stderr, redacted once when reported.
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    lines: VecDeque<String>,
}

impl StderrTail {
    pub(crate) fn push(&mut self, line: String) {
        if line.trim().is_empty() {
            return;
        }
        if self.lines.len() == STDERR_TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// The tail as one redacted line (`" | "` between lines), its last
    /// [`STDERR_TAIL_CHARS`] characters; `None` when the agent wrote nothing.
    pub(crate) fn report(&self) -> Option<String> {
        if self.lines.is_empty() {
            return None;
        }
        let joined: Vec<String> =
            self.lines.iter().map(|l| bb_normalize::redact::redact_text(l.trim())).collect();
        let joined = joined.join(" | ");
        let count = joined.chars().count();
        Some(if count > STDERR_TAIL_CHARS {
            let tail: String = joined.chars().skip(count - STDERR_TAIL_CHARS).collect();
            format!("…{tail}")
        } else {
            joined
        })
    }
}

/// Owns the process until it is gone; see the module doc.
pub(crate) async fn watch_process(
    mut process: Box<dyn EngineProcess>,
    mut stop: oneshot::Receiver<()>,
    closed: watch::Sender<Option<String>>,
    ctx: Ctx,
) {
    let mut tail = StderrTail::default();
    let mut lines_open = true;
    let reason = loop {
        tokio::select! {
            line = process.next_line(), if lines_open => match line {
                Some(l) if l.stream == OutputStream::Stderr => tail.push(l.text),
                Some(_) => {}
                None => lines_open = false,
            },
            _ = &mut stop => {
                if let Err(err) = process.terminate(STOP_GRACE).await {
                    tracing::warn!(connection = %ctx.id, %err, "stopping the agent failed");
                }
                break "disconnected".to_owned();
            }
            () = tokio::time::sleep(EXIT_POLL) => {}
        }
        // The agent may exit while something it started still holds its output open: poll.
        let exited = if lines_open {
            tokio::time::timeout(Duration::ZERO, process.wait()).await.ok()
        } else {
            Some(tokio::select! {
                exit = process.wait() => exit,
                _ = &mut stop => {
                    if let Err(err) = process.terminate(STOP_GRACE).await {
                        tracing::warn!(connection = %ctx.id, %err, "stopping the agent failed");
                    }
                    break "disconnected".to_owned();
                }
            })
        };
        if let Some(exit) = exited {
            // What it wrote just before it died is the useful part.
            while let Ok(Some(l)) =
                tokio::time::timeout(Duration::from_millis(50), process.next_line()).await
            {
                if l.stream == OutputStream::Stderr {
                    tail.push(l.text);
                }
            }
            let status = match exit {
                Ok(info) => format!("the agent exited ({info})"),
                Err(err) => format!("the agent's exit could not be read: {err}"),
            };
            break match tail.report() {
                Some(t) => format!("{status}; its last stderr: {t}"),
                None => status,
            };
        }
    };
    tracing::info!(connection = %ctx.id, %reason, "ACP agent gone");
    let dropped = {
        let mut s = lock(&ctx.shared);
        s.running.clear();
        (std::mem::take(&mut s.asks), std::mem::take(&mut s.elicitations))
    };
    drop(dropped);
    ctx.terminals.kill_all();
    let _ = closed.send(Some(reason.clone()));
    let mut detail = Map::new();
    detail.insert("reason".to_owned(), reason.into());
    ctx.emit(AcpEventKind::State { session_id: None, state: "closed", detail }).await;
}
