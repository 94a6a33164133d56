//! Path containment: the lexical vector table (POSIX and Windows), symlink escapes through
//! a fake filesystem, and the out-of-scope counter.

use std::collections::BTreeMap;

use super::jsonl;
use crate::contain::{
    MAX_PATH_BYTES, PathError, PathFlavor, PathGuard, Resolution, Resolver, Verdict, normalize,
};

fn flavor(s: &str) -> PathFlavor {
    match s {
        "posix" => PathFlavor::Posix,
        _ => PathFlavor::Windows,
    }
}

#[test]
fn lexical_vectors() {
    for v in jsonl("contain.jsonl") {
        let name = v["name"].as_str().unwrap();
        let mut guard =
            PathGuard::new(flavor(v["flavor"].as_str().unwrap()), v["root"].as_str().unwrap());
        let c = guard.check(v["path"].as_str().unwrap());
        assert_eq!(serde_json::to_value(c.verdict).unwrap(), v["verdict"], "{name}: {c:?}");
        assert_eq!(serde_json::to_value(&c.normalized).unwrap(), v["normalized"], "{name}");
        assert_eq!(guard.out_of_scope(), u64::from(c.verdict != Verdict::Inside), "{name}");
    }
}

#[test]
fn normalize_joins_and_collapses() {
    assert_eq!(normalize(PathFlavor::Posix, "a/./b/../c", Some("/r")).unwrap(), "/r/a/c");
    assert_eq!(normalize(PathFlavor::Windows, "a/b/..", Some("c:\\r")).unwrap(), "C:\\r\\a");
    assert!(normalize(PathFlavor::Posix, "a", None).is_err());
}

/// An in-memory POSIX filesystem: directories/files and symlinks, resolved like
/// `realpath` (symlinks followed, `..` applied after them, bounded hops).
#[derive(Debug, Default)]
struct FakeFs {
    entries: BTreeMap<String, Option<String>>, // path -> symlink target (None: plain entry)
}

impl FakeFs {
    fn dir(mut self, p: &str) -> Self {
        self.entries.insert(p.to_owned(), None);
        self
    }
    fn link(mut self, p: &str, target: &str) -> Self {
        self.entries.insert(p.to_owned(), Some(target.to_owned()));
        self
    }
}

impl Resolver for FakeFs {
    fn resolve(&self, path: &str) -> Resolution {
        let mut pending: Vec<String> =
            path.split('/').filter(|c| !c.is_empty()).rev().map(str::to_owned).collect();
        let mut cur: Vec<String> = Vec::new();
        let mut hops = 0;
        while let Some(c) = pending.pop() {
            match c.as_str() {
                "." => continue,
                ".." => {
                    cur.pop();
                    continue;
                }
                _ => {}
            }
            let candidate =
                format!("/{}", cur.iter().chain([&c]).cloned().collect::<Vec<_>>().join("/"));
            match self.entries.get(&candidate) {
                None => return Resolution::Missing,
                Some(None) => cur.push(c),
                Some(Some(target)) => {
                    hops += 1;
                    if hops > 40 {
                        return Resolution::Failed("too many levels of symbolic links".to_owned());
                    }
                    if target.starts_with('/') {
                        cur.clear();
                    }
                    pending.extend(
                        target.split('/').filter(|c| !c.is_empty()).rev().map(str::to_owned),
                    );
                }
            }
        }
        Resolution::Found(format!("/{}", cur.join("/")))
    }
}

fn fs() -> FakeFs {
    FakeFs::default()
        .dir("/ws")
        .dir("/ws/src")
        .dir("/etc")
        .dir("/etc/passwd")
        .dir("/real")
        .dir("/real/ws")
        .dir("/real/ws/a")
        .link("/ws/escape", "/etc")
        .link("/ws/rel_escape", "../etc")
        .link("/ws/inner", "src")
        .link("/ws/chain", "inner/../escape")
        .link("/ws/loop", "loop")
        .link("/link_root", "/real/ws")
}

#[test]
fn symlink_vectors() {
    let table: &[(&str, &str, Verdict, Option<&str>)] = &[
        ("/ws", "src/main.rs", Verdict::Inside, Some("/ws/src/main.rs")),
        ("/ws", "escape/passwd", Verdict::Outside, Some("/etc/passwd")),
        ("/ws", "escape", Verdict::Outside, Some("/etc")),
        ("/ws", "rel_escape/passwd", Verdict::Outside, Some("/etc/passwd")),
        ("/ws", "escape/new/file.txt", Verdict::Outside, Some("/etc/new/file.txt")),
        ("/ws", "inner/new.txt", Verdict::Inside, Some("/ws/src/new.txt")),
        ("/ws", "chain/x", Verdict::Outside, Some("/etc/x")),
        ("/ws", "new_dir/../new_file", Verdict::Inside, Some("/ws/new_file")),
        // `..` after a symlink applies to the link's target, as the OS does.
        ("/ws", "escape/../ws/src", Verdict::Inside, Some("/ws/src")),
        ("/ws", "inner/../../etc", Verdict::Outside, None),
        ("/ws", "loop/x", Verdict::Invalid, None),
        ("/ws", "../etc", Verdict::Outside, Some("/etc")),
        // A symlinked root is compared by its real path.
        ("/link_root", "a/b", Verdict::Inside, Some("/real/ws/a/b")),
        ("/missing_root", "a", Verdict::Invalid, None),
    ];
    for (root, path, verdict, normalized) in table {
        let mut guard = PathGuard::new(PathFlavor::Posix, root);
        let c = guard.check_resolved(path, &fs());
        assert_eq!(c.verdict, *verdict, "{root} {path}: {c:?}");
        if let Some(n) = normalized {
            assert_eq!(c.normalized.as_deref(), Some(*n), "{root} {path}");
        }
        assert_eq!(guard.out_of_scope(), u64::from(*verdict != Verdict::Inside));
    }
}

#[test]
fn windows_resolver_is_case_insensitive() {
    let resolver = |p: &str| {
        let lower = p.to_ascii_lowercase();
        if lower.starts_with("c:\\ws\\link") {
            Resolution::Found(format!("D:\\other{}", &p["C:\\ws\\link".len()..]))
        } else if lower.starts_with("c:\\ws") || lower == "c:\\" {
            Resolution::Found(p.to_uppercase())
        } else {
            Resolution::Missing
        }
    };
    let mut guard = PathGuard::new(PathFlavor::Windows, "C:\\ws");
    assert_eq!(guard.check_resolved("src\\a.txt", &resolver).verdict, Verdict::Inside);
    assert_eq!(guard.check_resolved("link\\a.txt", &resolver).verdict, Verdict::Outside);
    assert_eq!(guard.out_of_scope(), 1);
}

#[test]
fn counter_counts_every_rejection() {
    let mut guard = PathGuard::new(PathFlavor::Posix, "/ws");
    for p in ["a", "../b", "", "/etc", "c/../d", "x\0y"] {
        guard.check(p);
    }
    assert_eq!(guard.out_of_scope(), 4);
    let mut bad_root = PathGuard::new(PathFlavor::Posix, "relative");
    assert_eq!(bad_root.check("a").verdict, Verdict::Invalid);
    assert_eq!(bad_root.out_of_scope(), 1);
}

#[test]
fn an_overlong_path_is_invalid_before_any_resolving() {
    // Resolving walks every prefix of the path: an engine-supplied path of tens of
    // thousands of components would cost minutes. Longer than PATH_MAX is refused.
    let mut guard = PathGuard::new(PathFlavor::Posix, "/ws");
    let long = "a/".repeat(20_000);
    let c = guard.check_resolved(&long, &fs());
    assert_eq!(c.verdict, Verdict::Invalid);
    assert_eq!(c.error, Some(PathError::TooLong { len: 40_000, max: MAX_PATH_BYTES }));
    assert_eq!(guard.check(&long).verdict, Verdict::Invalid);
    assert_eq!(guard.out_of_scope(), 2);
    let longest = "a/".repeat(MAX_PATH_BYTES / 2);
    assert_eq!(guard.check_resolved(&longest, &fs()).verdict, Verdict::Inside);
}
