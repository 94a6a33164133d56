//! Workspace path containment as pure functions over a [`PathFlavor`]: lexical
//! normalization, and a symlink-safe check over a [`Resolver`] (the caller's filesystem view).

mod parse;

use serde::Serialize;

use parse::{AbsPath, parse};

/// Path syntax to apply, independent of the host (both are tested on any OS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PathFlavor {
    /// `/`-separated, case-sensitive.
    Posix,
    /// Drive letters, UNC, `\\?\`, either separator, case-insensitive, Win32 trimming.
    Windows,
}

/// The outcome of a containment check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Inside the root (or the root itself).
    Inside,
    /// Outside the root.
    Outside,
    /// Not a usable path (see [`PathError`]).
    Invalid,
}

/// Why a path (or root) is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[non_exhaustive]
pub enum PathError {
    /// Empty path.
    #[error("empty path")]
    Empty,
    /// A NUL byte.
    #[error("path contains a NUL byte")]
    NulByte,
    /// A relative path where an absolute one is needed (the root).
    #[error("path is not absolute")]
    NotAbsolute,
    /// `C:foo`: relative to a drive's current directory.
    #[error("drive-relative path (`C:foo`)")]
    DriveRelative,
    /// `\foo`: rooted on the current drive, which is unknown.
    #[error("rooted path without a drive (`\\foo`)")]
    RootedWithoutDrive,
    /// `\\.\…`, `\\?\Volume{…}` and other device or volume paths.
    #[error("device or volume path")]
    DeviceOrVolume,
    /// `\\server` without a share.
    #[error("UNC path without server and share")]
    BadUnc,
    /// A character Windows does not allow in names (`<>:"|?*`, controls).
    #[error("invalid character {0:?} in a Windows path")]
    InvalidChar(char),
    /// A reserved device name (`CON`, `NUL`, `COM1`, …).
    #[error("reserved device name {0:?}")]
    ReservedName(String),
    /// A component of only dots and spaces (`...`, `. .`), or `.`/`..` in a verbatim path.
    #[error("component {0:?} is only dots and spaces")]
    DotsOnlyComponent(String),
    /// The resolver could not resolve the root.
    #[error("the root does not resolve: {0}")]
    RootUnresolved(String),
    /// The resolver failed for a reason other than "missing".
    #[error("resolution failed: {0}")]
    ResolveFailed(String),
    /// Longer than [`MAX_PATH_BYTES`].
    #[error("path of {len} bytes is longer than {max}")]
    TooLong {
        /// The path's length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// The longest path accepted, in bytes (Linux `PATH_MAX`). Checking resolves every prefix
/// of a path, so the bound also bounds the work one engine-supplied path can cause.
pub const MAX_PATH_BYTES: usize = 4096;

/// The result of checking one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checked {
    /// Inside, outside or invalid.
    pub verdict: Verdict,
    /// The normalized absolute path (lexical, or resolved for the symlink-safe check);
    /// `None` when invalid.
    pub normalized: Option<String>,
    /// Why it is invalid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<PathError>,
}

impl Checked {
    fn invalid(e: PathError) -> Self {
        Self { verdict: Verdict::Invalid, normalized: None, error: Some(e) }
    }
}

/// What a resolver says about one absolute path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The path exists; its real path (symlinks resolved, absolute, same flavor).
    Found(String),
    /// Nothing exists at the path.
    Missing,
    /// Resolution failed (permission, loop, …): treated as a rejection.
    Failed(String),
}

/// The filesystem view the symlink-safe check needs: the real path of an existing path.
/// The pure core never touches a filesystem itself.
pub trait Resolver {
    /// Resolves `path` (absolute, in the guard's flavor, possibly containing `..`).
    fn resolve(&self, path: &str) -> Resolution;
}

impl<F: Fn(&str) -> Resolution> Resolver for F {
    fn resolve(&self, path: &str) -> Resolution {
        self(path)
    }
}

/// Normalizes a path lexically: joined onto `base` when relative, `.`/`..` applied,
/// separators and (on Windows) trailing dots/spaces normalized.
pub fn normalize(flavor: PathFlavor, path: &str, base: Option<&str>) -> Result<String, PathError> {
    let base = base.map(|b| parse(flavor, b, None, true)).transpose()?;
    Ok(parse(flavor, path, base.as_ref(), true)?.render())
}

/// A workspace root and the out-of-scope counter of every rejection made against it.
#[derive(Debug, Clone)]
pub struct PathGuard {
    flavor: PathFlavor,
    root: Result<AbsPath, PathError>,
    out_of_scope: u64,
}

impl PathGuard {
    /// A guard for `root` (must be absolute; an invalid root makes every check invalid).
    pub fn new(flavor: PathFlavor, root: &str) -> Self {
        Self { flavor, root: parse(flavor, root, None, true), out_of_scope: 0 }
    }

    /// The path flavor.
    pub fn flavor(&self) -> PathFlavor {
        self.flavor
    }

    /// Rejections so far (outside or invalid): `out_of_scope_path_attempt_count`.
    pub fn out_of_scope(&self) -> u64 {
        self.out_of_scope
    }

    fn count(&mut self, c: Checked) -> Checked {
        if c.verdict != Verdict::Inside {
            self.out_of_scope += 1;
        }
        c
    }

    /// Lexical containment: relative paths are joined onto the root.
    pub fn check(&mut self, path: &str) -> Checked {
        let c = self.lexical(path);
        self.count(c)
    }

    fn lexical(&self, path: &str) -> Checked {
        let root = match &self.root {
            Ok(r) => r,
            Err(e) => return Checked::invalid(e.clone()),
        };
        match parse(self.flavor, path, Some(root), true) {
            Ok(p) => Checked {
                verdict: if p.starts_with(root) { Verdict::Inside } else { Verdict::Outside },
                normalized: Some(p.render()),
                error: None,
            },
            Err(e) => Checked::invalid(e),
        }
    }

    /// Symlink-safe containment: the path must be lexically inside, and its real path —
    /// the longest existing prefix resolved, the rest appended — must be inside the root's
    /// real path.
    pub fn check_resolved(&mut self, path: &str, resolver: &dyn Resolver) -> Checked {
        let c = self.resolved(path, resolver);
        self.count(c)
    }

    fn resolved(&self, path: &str, resolver: &dyn Resolver) -> Checked {
        let lexical = self.lexical(path);
        if lexical.verdict != Verdict::Inside {
            return lexical;
        }
        let root = match &self.root {
            Ok(r) => r,
            Err(e) => return Checked::invalid(e.clone()),
        };
        let real_root = match resolver.resolve(&root.render()) {
            Resolution::Found(r) => match parse(self.flavor, &r, None, true) {
                Ok(r) => r,
                Err(e) => return Checked::invalid(PathError::RootUnresolved(e.to_string())),
            },
            Resolution::Missing => {
                return Checked::invalid(PathError::RootUnresolved("missing".to_owned()));
            }
            Resolution::Failed(e) => return Checked::invalid(PathError::RootUnresolved(e)),
        };
        // Keep `..` so the resolver applies it after symlinks, as the OS would.
        let raw = match parse(self.flavor, path, Some(root), false) {
            Ok(p) => p,
            Err(e) => return Checked::invalid(e),
        };
        for k in (0..=raw.comps.len()).rev() {
            let prefix = AbsPath { comps: raw.comps[..k].to_vec(), ..raw.clone() };
            match resolver.resolve(&prefix.render()) {
                Resolution::Found(real) => {
                    let mut real = match parse(self.flavor, &real, None, true) {
                        Ok(r) => r,
                        Err(e) => return Checked::invalid(PathError::ResolveFailed(e.to_string())),
                    };
                    // The rest does not exist: no symlinks in it; apply it lexically.
                    real.push_all(raw.comps[k..].iter().cloned(), true);
                    let verdict = if real.starts_with(&real_root) {
                        Verdict::Inside
                    } else {
                        Verdict::Outside
                    };
                    return Checked { verdict, normalized: Some(real.render()), error: None };
                }
                Resolution::Missing => {}
                Resolution::Failed(e) => return Checked::invalid(PathError::ResolveFailed(e)),
            }
        }
        Checked::invalid(PathError::ResolveFailed("no existing prefix".to_owned()))
    }
}
