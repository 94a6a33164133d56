//! Release builds for x86_64 Linux link the functions an idle sidecar has run first in .text,
//! then those a streaming sidecar runs, in the order of `startup-order.txt`
//! (`scripts/startup-order.sh` writes it). The kernel maps 64 KiB of code around every page a
//! process touches: spread over the binary, start-up code kept ~5 MB of it resident; packed,
//! it keeps about a third of that (and a streaming sidecar ~3.7 MB less at its peak). The layout changes,
//! not the code. The option is lld's: the linker of this target since Rust 1.90 (the
//! workspace's minimum is 1.91). Names the binary no longer has are skipped silently.

#![allow(clippy::print_stdout, reason = "a build script speaks to cargo on stdout")]

use std::env;
use std::path::Path;

fn main() {
    let list =
        Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("startup-order.txt");
    println!("cargo::rerun-if-changed=startup-order.txt");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = env::var("TARGET").unwrap_or_default();
    if release && target == "x86_64-unknown-linux-gnu" && list.is_file() {
        println!(
            "cargo::rustc-link-arg-bin=bb-sidecar=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        println!("cargo::rustc-link-arg-bin=bb-sidecar=-Wl,--no-warn-symbol-ordering");
    }
}
