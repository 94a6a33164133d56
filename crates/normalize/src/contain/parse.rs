//! Lexical path parsing and normalization for POSIX and Windows path flavors.

use super::{MAX_PATH_BYTES, PathError, PathFlavor};

/// Where an absolute path starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Prefix {
    /// POSIX `/`.
    Root,
    /// Windows drive, upper-cased letter.
    Drive(char),
    /// Windows UNC share.
    Unc { server: String, share: String },
}

/// A parsed absolute path: a prefix and its components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AbsPath {
    pub(crate) flavor: PathFlavor,
    pub(crate) prefix: Prefix,
    /// Components; `..` only appears when parsed with `collapse == false`.
    pub(crate) comps: Vec<String>,
}

impl AbsPath {
    /// Renders the path in its flavor's canonical form.
    pub(crate) fn render(&self) -> String {
        match &self.prefix {
            Prefix::Root => format!("/{}", self.comps.join("/")),
            Prefix::Drive(d) => format!("{d}:\\{}", self.comps.join("\\")),
            Prefix::Unc { server, share } => {
                let mut s = format!("\\\\{server}\\{share}");
                for c in &self.comps {
                    s.push('\\');
                    s.push_str(c);
                }
                s
            }
        }
    }

    /// Appends components, applying `.`/`..` when `collapse` (`..` stops at the prefix).
    pub(crate) fn push_all(&mut self, comps: impl IntoIterator<Item = String>, collapse: bool) {
        for c in comps {
            if collapse && c == ".." {
                self.comps.pop();
            } else {
                self.comps.push(c);
            }
        }
    }

    /// Whether `self` equals `root` or lies under it (case-insensitive on Windows).
    pub(crate) fn starts_with(&self, root: &AbsPath) -> bool {
        let eq = |a: &str, b: &str| match self.flavor {
            PathFlavor::Posix => a == b,
            PathFlavor::Windows => fold(a) == fold(b),
        };
        let prefix_eq = match (&self.prefix, &root.prefix) {
            (Prefix::Root, Prefix::Root) => true,
            (Prefix::Drive(a), Prefix::Drive(b)) => a == b,
            (Prefix::Unc { server: s1, share: h1 }, Prefix::Unc { server: s2, share: h2 }) => {
                eq(s1, s2) && eq(h1, h2)
            }
            _ => false,
        };
        prefix_eq
            && self.comps.len() >= root.comps.len()
            && self.comps.iter().zip(&root.comps).all(|(a, b)| eq(a, b))
    }
}

/// Case folding for Windows name comparison.
fn fold(s: &str) -> String {
    s.chars().flat_map(char::to_lowercase).collect()
}

/// Parses `path` in `flavor`. A relative path is joined onto `base`; without a base it is
/// an error. With `collapse`, `.` and `..` are applied lexically; without, `..` is kept.
pub(crate) fn parse(
    flavor: PathFlavor,
    path: &str,
    base: Option<&AbsPath>,
    collapse: bool,
) -> Result<AbsPath, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.contains('\0') {
        return Err(PathError::NulByte);
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong { len: path.len(), max: MAX_PATH_BYTES });
    }
    match flavor {
        PathFlavor::Posix => parse_posix(path, base, collapse),
        PathFlavor::Windows => parse_windows(path, base, collapse),
    }
}

fn parse_posix(path: &str, base: Option<&AbsPath>, collapse: bool) -> Result<AbsPath, PathError> {
    let mut out = if let Some(rest) = path.strip_prefix('/') {
        let _ = rest;
        AbsPath { flavor: PathFlavor::Posix, prefix: Prefix::Root, comps: Vec::new() }
    } else {
        base.cloned().ok_or(PathError::NotAbsolute)?
    };
    let comps = path.split('/').filter(|c| !c.is_empty() && *c != ".").map(str::to_owned);
    out.push_all(comps, collapse);
    Ok(out)
}

const WIN_RESERVED: &[&str] = &["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];

fn check_win_component(c: &str) -> Result<(), PathError> {
    if let Some(bad) = c
        .chars()
        .find(|ch| matches!(ch, '<' | '>' | ':' | '"' | '|' | '?' | '*') || ch.is_control())
    {
        return Err(PathError::InvalidChar(bad));
    }
    let stem = c.split('.').next().unwrap_or(c).trim_end_matches(' ').to_ascii_uppercase();
    let numbered = |p: &str| {
        stem.strip_prefix(p).is_some_and(|n| {
            n.len() == 1 && n.chars().all(|d| d.is_ascii_digit() || "¹²³".contains(d))
        })
    };
    if WIN_RESERVED.contains(&stem.as_str()) || numbered("COM") || numbered("LPT") {
        return Err(PathError::ReservedName(c.to_owned()));
    }
    Ok(())
}

/// Win32 normalization of one component: trailing dots and spaces are dropped; components
/// made only of dots and spaces other than `.` and `..` are rejected.
fn win_component(c: &str) -> Result<Option<String>, PathError> {
    match c {
        "" | "." => return Ok(None),
        ".." => return Ok(Some("..".to_owned())),
        _ => {}
    }
    let trimmed = c.trim_end_matches(['.', ' ']);
    if trimmed.is_empty() {
        return Err(PathError::DotsOnlyComponent(c.to_owned()));
    }
    check_win_component(trimmed)?;
    Ok(Some(trimmed.to_owned()))
}

fn drive_letter(s: &str) -> Option<(char, &str)> {
    let mut it = s.chars();
    let d = it.next().filter(char::is_ascii_alphabetic)?;
    let rest = it.as_str().strip_prefix(':')?;
    Some((d.to_ascii_uppercase(), rest))
}

fn parse_windows(path: &str, base: Option<&AbsPath>, collapse: bool) -> Result<AbsPath, PathError> {
    let abs = |prefix| AbsPath { flavor: PathFlavor::Windows, prefix, comps: Vec::new() };
    // Verbatim (`\\?\`, `\??\`): no separator translation, no `.`/`..`, names literal.
    let verbatim = path.strip_prefix(r"\\?\").or_else(|| path.strip_prefix(r"\??\"));
    if let Some(rest) = verbatim {
        let (mut out, tail) =
            if let Some(unc) = rest.strip_prefix("UNC\\").or_else(|| rest.strip_prefix("unc\\")) {
                let mut parts = unc.splitn(3, '\\');
                let server = parts.next().filter(|s| !s.is_empty()).ok_or(PathError::BadUnc)?;
                let share = parts.next().filter(|s| !s.is_empty()).ok_or(PathError::BadUnc)?;
                (
                    abs(Prefix::Unc { server: server.to_owned(), share: share.to_owned() }),
                    parts.next().unwrap_or(""),
                )
            } else if let Some((d, tail)) = drive_letter(rest) {
                let tail = tail.strip_prefix('\\').ok_or(PathError::DeviceOrVolume)?;
                (abs(Prefix::Drive(d)), tail)
            } else {
                return Err(PathError::DeviceOrVolume);
            };
        for c in tail.split('\\') {
            if c.is_empty() {
                continue;
            }
            if c == "." || c == ".." {
                return Err(PathError::DotsOnlyComponent(c.to_owned()));
            }
            if let Some(bad) = c.chars().find(|ch| {
                matches!(ch, '<' | '>' | ':' | '"' | '|' | '?' | '*' | '/') || ch.is_control()
            }) {
                return Err(PathError::InvalidChar(bad));
            }
            out.comps.push(c.to_owned());
        }
        return Ok(out);
    }
    let p = path.replace('/', "\\");
    if p.starts_with(r"\\.\") || p.starts_with(r"\\?") {
        return Err(PathError::DeviceOrVolume);
    }
    let (mut out, tail) = if let Some(unc) = p.strip_prefix(r"\\") {
        let mut parts = unc.splitn(3, '\\');
        let server = parts.next().filter(|s| !s.is_empty()).ok_or(PathError::BadUnc)?;
        let share = parts.next().filter(|s| !s.is_empty()).ok_or(PathError::BadUnc)?;
        check_win_component(server)?;
        check_win_component(share)?;
        (
            abs(Prefix::Unc { server: server.to_owned(), share: share.to_owned() }),
            parts.next().unwrap_or("").to_owned(),
        )
    } else if let Some((d, tail)) = drive_letter(&p) {
        let Some(tail) = tail.strip_prefix('\\') else {
            return Err(PathError::DriveRelative);
        };
        (abs(Prefix::Drive(d)), tail.to_owned())
    } else if p.starts_with('\\') {
        return Err(PathError::RootedWithoutDrive);
    } else {
        (base.cloned().ok_or(PathError::NotAbsolute)?, p.clone())
    };
    let mut comps = Vec::new();
    for c in tail.split('\\') {
        if let Some(c) = win_component(c)? {
            comps.push(c);
        }
    }
    out.push_all(comps, collapse);
    Ok(out)
}
