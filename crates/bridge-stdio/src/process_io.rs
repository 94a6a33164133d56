//! The process's stdin and stdout as async byte streams, driven by the runtime's reactor when
//! they are pipes or sockets (what an IDE spawns a sidecar with), so a read or a write is one
//! system call on the runtime's own thread, not a hand-off to a blocking thread and back.
//!
//! * A pipe (FIFO) is reopened through `/proc/self/fd/N`: a new open file description of the
//!   same pipe, made non-blocking, so the flag reaches neither the parent nor anyone else
//!   holding the original descriptor.
//! * A socket (Node/libuv spawns children with socket pairs) cannot be reopened: its
//!   descriptor is duplicated and made non-blocking. That flag is shared with fd 0/1 of this
//!   process (nothing else reads or writes them) and with whoever else holds the same end,
//!   normally no one (the parent holds the other end of the pair; the engines the sidecar
//!   starts get pipes of their own).
//! * Anything else (a terminal, a file, no `/proc`), or when the above fails: tokio's
//!   blocking-thread `stdin()`/`stdout()`.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

/// The process's stdin.
#[derive(Debug)]
pub(crate) enum Input {
    /// A pipe, reopened non-blocking.
    Pipe(pipe::Receiver),
    /// A socket, duplicated non-blocking.
    Socket(UnixStream),
    /// Anything else, read on a blocking thread.
    Std(tokio::io::Stdin),
}

/// The process's stdout.
#[derive(Debug)]
pub(crate) enum Output {
    /// A pipe, reopened non-blocking.
    Pipe(pipe::Sender),
    /// A socket, duplicated non-blocking.
    Socket(UnixStream),
    /// Anything else, written on a blocking thread.
    Std(tokio::io::Stdout),
}

/// What a descriptor is connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Fifo,
    Socket,
    Other,
}

/// What `fd` is: `/proc/self/fd/N` names the open file itself (a pipe or a socket, not a
/// path).
pub(crate) fn kind(fd: BorrowedFd<'_>) -> Kind {
    match std::fs::metadata(proc_path(fd)).map(|m| m.file_type()) {
        Ok(t) if t.is_fifo() => Kind::Fifo,
        Ok(t) if t.is_socket() => Kind::Socket,
        _ => Kind::Other,
    }
}

fn proc_path(fd: BorrowedFd<'_>) -> String {
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}

/// The pipe `fd` reads from, opened anew and non-blocking.
pub(crate) fn pipe_receiver(fd: BorrowedFd<'_>) -> io::Result<pipe::Receiver> {
    pipe::OpenOptions::new().open_receiver(proc_path(fd))
}

/// The pipe `fd` writes to, opened anew and non-blocking.
pub(crate) fn pipe_sender(fd: BorrowedFd<'_>) -> io::Result<pipe::Sender> {
    pipe::OpenOptions::new().open_sender(proc_path(fd))
}

/// A non-blocking duplicate of a socket descriptor, registered with the runtime.
pub(crate) fn socket(fd: BorrowedFd<'_>) -> io::Result<UnixStream> {
    let owned: OwnedFd = fd.try_clone_to_owned()?;
    let stream = std::os::unix::net::UnixStream::from(owned);
    stream.set_nonblocking(true)?;
    UnixStream::from_std(stream)
}

/// The process's stdin (must be called inside the runtime).
pub(crate) fn input() -> Input {
    reopened(
        io::stdin().as_fd(),
        "stdin read",
        |fd| pipe_receiver(fd).map(Input::Pipe),
        Input::Socket,
        || Input::Std(tokio::io::stdin()),
    )
}

/// The process's stdout (must be called inside the runtime).
pub(crate) fn output() -> Output {
    reopened(
        io::stdout().as_fd(),
        "stdout written",
        |fd| pipe_sender(fd).map(Output::Pipe),
        Output::Socket,
        || Output::Std(tokio::io::stdout()),
    )
}

/// A standard stream on the reactor when it is a pipe or a socket that can be reopened
/// non-blocking, else (a file, a terminal, a failure) on tokio's blocking wrapper.
fn reopened<T>(
    fd: BorrowedFd<'_>,
    what: &str,
    pipe: fn(BorrowedFd<'_>) -> io::Result<T>,
    on_socket: fn(UnixStream) -> T,
    blocking: fn() -> T,
) -> T {
    let opened = match kind(fd) {
        Kind::Fifo => pipe(fd),
        Kind::Socket => socket(fd).map(on_socket),
        Kind::Other => return blocking(),
    };
    opened.unwrap_or_else(|err| {
        tracing::debug!(%err, "{what} on a blocking thread");
        blocking()
    })
}

impl AsyncRead for Input {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(r) => Pin::new(r).poll_read(cx, buf),
            Self::Socket(r) => Pin::new(r).poll_read(cx, buf),
            Self::Std(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Pipe(w) => Pin::new(w).poll_write(cx, buf),
            Self::Socket(w) => Pin::new(w).poll_write(cx, buf),
            Self::Std(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(w) => Pin::new(w).poll_flush(cx),
            Self::Socket(w) => Pin::new(w).poll_flush(cx),
            Self::Std(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(w) => Pin::new(w).poll_shutdown(cx),
            Self::Socket(w) => Pin::new(w).poll_shutdown(cx),
            Self::Std(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}
