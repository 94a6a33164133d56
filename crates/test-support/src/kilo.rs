//! Where the real Kilo binary is: `$BB_KILO_BIN`, else what `scripts/engine.sh` installs.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::repo_root;

/// The real Kilo binary; panics with the reason and what to do when it cannot be had.
pub fn kilo_bin() -> PathBuf {
    lookup(std::env::var_os("BB_KILO_BIN").map(PathBuf::from)).unwrap_or_else(|why| panic!("{why}"))
}

/// As [`kilo_bin`], but `None` (said on stderr) when it cannot be had and
/// `BB_SKIP_REAL_ENGINE=1` opts out explicitly; the caller then returns.
pub fn kilo_bin_or_skip() -> Option<PathBuf> {
    match lookup(std::env::var_os("BB_KILO_BIN").map(PathBuf::from)) {
        Ok(bin) => Some(bin),
        Err(why) if std::env::var("BB_SKIP_REAL_ENGINE").is_ok_and(|v| v == "1") => {
            eprintln!("BB_SKIP_REAL_ENGINE=1: skipping a real-engine test ({why})");
            None
        }
        Err(why) => panic!("{why}"),
    }
}

/// `from_env` (the value of `BB_KILO_BIN`) when set, else the output of `scripts/engine.sh`.
pub(crate) fn lookup(from_env: Option<PathBuf>) -> Result<PathBuf, String> {
    let found = match from_env {
        Some(bin) if bin.is_file() => Ok(bin),
        Some(bin) => Err(format!("BB_KILO_BIN={} is not a file", bin.display())),
        None => {
            let script = repo_root().join("scripts/engine.sh");
            match Command::new("bash").arg(&script).stderr(Stdio::inherit()).output() {
                Ok(out) if out.status.success() => {
                    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_owned()))
                }
                Ok(out) => Err(format!("{} failed with {}", script.display(), out.status)),
                Err(err) => Err(format!("cannot run {}: {err}", script.display())),
            }
        }
    };
    found.map_err(|why| {
        format!(
            "the real Kilo engine is needed for this test and cannot be had: {why}. \
             Run `bash scripts/engine.sh` (npm needed) or set BB_KILO_BIN; \
             BB_SKIP_REAL_ENGINE=1 opts out explicitly where a test allows it."
        )
    })
}
