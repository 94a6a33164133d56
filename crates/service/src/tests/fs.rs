//! The real filesystem resolver: a path resolves to its real path (symlinks followed), a
//! missing one and one below a file are missing alike, and the containment check over it
//! finds a path below a file inside the workspace, and a symlink out of it outside. The
//! state directory's atomic write: the whole new file or the old one, no temporary file left.

use bb_normalize::{PathFlavor, PathGuard, Resolution, Verdict};

use crate::fs::{real_path, write_atomic};

#[test]
fn paths_resolve_on_the_real_filesystem() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("file.txt"), "x").unwrap();
    let at = |sub: &str| root.join(sub).display().to_string();
    assert_eq!(real_path(&at("file.txt")), Resolution::Found(at("file.txt")));
    assert_eq!(real_path(&at("missing.txt")), Resolution::Missing);
    assert_eq!(real_path(&at("file.txt/below")), Resolution::Missing, "below a file");

    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
    let mut guard = PathGuard::new(PathFlavor::Posix, &root.display().to_string());
    let verdict = |guard: &mut PathGuard, p: &str| guard.check_resolved(p, &real_path).verdict;
    assert_eq!(verdict(&mut guard, "file.txt/below/deeper"), Verdict::Inside);
    assert_eq!(verdict(&mut guard, "new/file.txt"), Verdict::Inside);
    assert_eq!(verdict(&mut guard, "link/secret"), Verdict::Outside);
}

/// The directory's entries, sorted (a leftover temporary file would show here).
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_atomic_write_replaces_the_file_whole_and_leaves_nothing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/nested/prompts.json");
    write_atomic(&path, b"first").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"first", "the missing directories are created");

    // A temporary name an older writer used (`<file>.tmp`) is neither read nor in the way.
    std::fs::write(path.with_extension("json.tmp"), b"stale").unwrap();
    write_atomic(&path, b"second, longer than the first").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"second, longer than the first");
    write_atomic(&path, b"").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"", "a shorter file is not the old one's tail");
    assert_eq!(entries(path.parent().unwrap()), ["prompts.json", "prompts.json.tmp"]);
}

#[test]
fn an_atomic_write_that_cannot_happen_says_why_and_keeps_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    // The directory cannot be made: a file stands where it would be.
    std::fs::write(dir.path().join("blocker"), b"x").unwrap();
    let err = write_atomic(&dir.path().join("blocker/cursors.json"), b"new").unwrap_err();
    assert!(
        matches!(err.kind(), std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotADirectory),
        "{err}"
    );

    // The target is a directory: the rename fails, the directory stays and no temp file is left.
    let target = dir.path().join("occupied");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("inside"), b"kept").unwrap();
    assert!(write_atomic(&target, b"new").is_err());
    assert_eq!(std::fs::read(target.join("inside")).unwrap(), b"kept");
    assert_eq!(entries(dir.path()), ["blocker", "occupied"]);
}
