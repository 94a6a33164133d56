//! The same JSON Lines on a Unix socket: any number of clients, each one webview connection
//! of the one runtime, and a listener that lingers after its last client leaves.
//!
//! * **One per path.** [`bind`] first takes an exclusive lock on `PATH.lock` (kept, never
//!   removed; it holds the owner's pid) for the life of the process: a second bridge on the
//!   same path finds it held and gets [`Bound::Running`] (the caller connects to the running
//!   one) instead of a socket. The lock holder removes a stale socket file a dead owner left.
//! * **Owner only.** The socket is bound under a temporary name, made mode 0600, then
//!   renamed into place, so no one else can connect even for a moment; a missing parent
//!   directory is created with mode 0700.
//! * **Linger.** [`SocketListener::serve`] hands each accepted client to the runtime as a
//!   [`WebviewSink`] (framed by [`crate::spawn_io`], so every rule of the stdio bridge holds)
//!   and counts the clients whose input is still open. While there are none — from the start
//!   too — a timer of `linger` runs; a client that connects stops it. When it fires, or on
//!   `shutdown`, the socket file is removed (no new client), every open client's input is
//!   closed and the connection channel is dropped: the runtime then answers what is in
//!   flight, stops the engine and ends.

use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bb_protocol::Limits;
use bb_service::WebviewSink;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::net::UnixListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// What [`bind`] found at the path.
#[derive(Debug)]
pub enum Bound {
    /// This process owns the path and listens on it.
    Listening(SocketListener),
    /// Another live bridge owns the path (its pid, when it could be read).
    Running {
        /// The owner's process id.
        pid: Option<u32>,
    },
}

/// Why [`SocketListener::serve`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// No client for the whole linger period.
    Linger,
    /// `shutdown` resolved.
    Shutdown,
    /// The runtime stopped taking connections.
    RuntimeGone,
}

/// A bound socket, owned by this process until it is dropped (which removes the socket
/// file).
#[derive(Debug)]
pub struct SocketListener {
    listener: Option<std::os::unix::net::UnixListener>,
    path: PathBuf,
    /// Held for the life of the process: the exclusive lock on `PATH.lock`.
    _lock: File,
}

/// Takes the path for this process, or finds the bridge that owns it. Errors name the path
/// and what failed (a path longer than the platform's socket path limit included). Needs no
/// async runtime; [`SocketListener::serve`] does.
pub fn bind(path: &Path) -> io::Result<Bound> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{} names no file", path.display()))
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).map_err(|e| at(&dir, e))?;
    let mut lock_name = name.to_owned();
    lock_name.push(".lock");
    let lock_path = dir.join(lock_name);
    let mut lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|e| at(&lock_path, e))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = lock.read_to_string(&mut text);
            return Ok(Bound::Running { pid: text.trim().parse().ok() });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(at(&lock_path, e)),
    }
    lock.set_len(0).map_err(|e| at(&lock_path, e))?;
    write!(lock, "{}", std::process::id()).map_err(|e| at(&lock_path, e))?;
    // We own the path: whatever socket is there was left by an owner that died.
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(|e| at(path, e))?;
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists and is not a socket; remove it or choose another path",
                    path.display()
                ),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(at(path, e)),
    }
    let temp = dir.join(format!(".bb-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let listener = std::os::unix::net::UnixListener::bind(&temp).map_err(|e| at(&temp, e))?;
    let placed = listener
        .set_nonblocking(true)
        .and_then(|()| std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o600)))
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&temp);
        return Err(at(path, e));
    }
    Ok(Bound::Listening(SocketListener {
        listener: Some(listener),
        path: path.to_path_buf(),
        _lock: lock,
    }))
}

fn at(path: &Path, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

impl SocketListener {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Accepts clients and hands each to the runtime on `connections` until no client was
    /// connected for `linger`, `shutdown` resolves or the runtime is gone; then removes the
    /// socket file, closes every client's input and drops `connections`. Returns why, and
    /// the output writers of the clients (each ends once the runtime dropped its side).
    pub async fn serve(
        &mut self,
        connections: mpsc::Sender<WebviewSink>,
        limits: Limits,
        linger: Duration,
        shutdown: impl Future<Output = ()>,
    ) -> (Ended, Vec<JoinHandle<()>>) {
        let listener = match self.listener.take().map(UnixListener::from_std) {
            Some(Ok(listener)) => listener,
            Some(Err(err)) => {
                tracing::error!(%err, "the socket cannot be served");
                self.remove_file();
                return (Ended::RuntimeGone, Vec::new());
            }
            None => return (Ended::RuntimeGone, Vec::new()),
        };
        tokio::pin!(shutdown);
        let (close_tx, close_rx) = watch::channel(false);
        let mut readers = FuturesUnordered::new();
        let mut writers = Vec::new();
        let idle = tokio::time::sleep(linger);
        tokio::pin!(idle);
        let ended = loop {
            tokio::select! {
                () = &mut shutdown => break Ended::Shutdown,
                () = &mut idle, if readers.is_empty() => break Ended::Linger,
                Some(_) = readers.next(), if !readers.is_empty() => {
                    if readers.is_empty() {
                        tracing::info!(linger_secs = linger.as_secs(), "the last client left; lingering");
                        idle.set(tokio::time::sleep(linger));
                    }
                }
                accepted = listener.accept() => {
                    let stream = match accepted {
                        Ok((stream, _)) => stream,
                        Err(err) => {
                            tracing::warn!(%err, "accepting a client failed");
                            continue;
                        }
                    };
                    let (read, write) = stream.into_split();
                    let mut close = close_rx.clone();
                    let closed = async move {
                        let _ = close.wait_for(|c| *c).await;
                    };
                    let (sink, bridge) = crate::spawn_io(read, write, limits, closed);
                    if connections.send(sink).await.is_err() {
                        bridge.reader.abort();
                        break Ended::RuntimeGone;
                    }
                    tracing::info!(clients = readers.len() + 1, "a client connected");
                    readers.push(bridge.reader);
                    writers.push(bridge.writer);
                }
            }
        };
        drop(listener);
        self.remove_file();
        let _ = close_tx.send(true);
        drop(connections);
        (ended, writers)
    }

    fn remove_file(&self) {
        if let Err(err) = std::fs::remove_file(&self.path)
            && err.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(%err, path = %self.path.display(), "removing the socket failed");
        }
    }
}

impl Drop for SocketListener {
    fn drop(&mut self) {
        if self.listener.is_some() {
            self.remove_file();
        }
    }
}
