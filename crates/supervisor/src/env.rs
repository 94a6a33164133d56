//! The environment allow-list for engine processes.

use std::ffi::OsString;

/// Variables never inherited even though they match the allow-list: the supervisor sets the
/// server credentials itself.
const DENIED: &[&str] = &["KILO_SERVER_PASSWORD", "KILO_SERVER_USERNAME"];

/// Whether a parent variable may be passed to an engine: `PATH`, `HOME`, `USER`, `TMPDIR`,
/// `TZ`, `LANG`, `LANGUAGE`, `LC_*`, `XDG_*` and the engine's own `KILO_*` settings (minus the
/// server credentials).
pub fn is_allowed(name: &str) -> bool {
    if DENIED.contains(&name) {
        return false;
    }
    matches!(name, "PATH" | "HOME" | "USER" | "TMPDIR" | "TZ" | "LANG" | "LANGUAGE")
        || name.starts_with("LC_")
        || name.starts_with("XDG_")
        || name.starts_with("KILO_")
}

/// Keeps the allow-listed variables of `parent` (pass `std::env::vars_os()`), in order.
/// Names that are not valid UTF-8 are dropped.
pub fn inherit_allowed(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    parent.into_iter().filter(|(k, _)| k.to_str().is_some_and(is_allowed)).collect()
}
