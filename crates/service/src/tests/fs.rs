//! The real filesystem resolver: a path resolves to its real path (symlinks followed), a
//! missing one and one below a file are missing alike, and the containment check over it
//! finds a path below a file inside the workspace, and a symlink out of it outside.

use bb_normalize::{PathFlavor, PathGuard, Resolution, Verdict};

use crate::fs::real_path;

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
