//! Runs `bb-harness` with arguments and stdin (the one place the tests start it).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The repository's `fixtures/` directory.
pub(crate) fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Runs the harness to completion: success and stdout.
pub(crate) fn harness(args: &[&str], stdin: &[u8]) -> (bool, String) {
    let out = output(args, stdin);
    (out.status.success(), String::from_utf8(out.stdout).unwrap())
}

/// Runs the harness to completion, feeding `stdin` from a thread; the whole output. The
/// child may stop reading early (an over-limit stream): a broken pipe is expected.
#[allow(clippy::disallowed_methods)] // the tests drive the real binary
pub(crate) fn output(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bb-harness"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || drop(pipe.write_all(&input)));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}
