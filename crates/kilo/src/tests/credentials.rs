//! The engine's credential store: found where the engine keeps it, readable by others
//! reported (without its contents), private or missing not.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use crate::credentials::{Finding, check, data_dir};

#[test]
fn the_store_lives_in_the_engines_data_directory() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    };
    let xdg = data_dir(env(&[("XDG_DATA_HOME", "/x/data"), ("HOME", "/home/u")]));
    assert_eq!(xdg, Some(PathBuf::from("/x/data/kilo")));
    let home = data_dir(env(&[("HOME", "/home/u"), ("XDG_DATA_HOME", "")]));
    assert_eq!(home, Some(PathBuf::from("/home/u/.local/share/kilo")));
    assert_eq!(data_dir(env(&[])), None);
}

#[test]
fn a_store_readable_by_others_is_reported_without_its_contents() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(check(dir.path()), Finding::Missing);
    let store = dir.path().join("auth.json");
    let secret = "sk-kilo-never-shown-0123456789";
    std::fs::write(&store, format!("{{\"mock\":{{\"type\":\"api\",\"key\":\"{secret}\"}}}}"))
        .unwrap();
    for (mode, insecure) in
        [(0o600, false), (0o400, false), (0o640, true), (0o604, true), (0o644, true)]
    {
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(mode)).unwrap();
        let found = check(dir.path());
        assert_eq!(found.insecure(), insecure, "mode {mode:o}: {found:?}");
        if insecure {
            let warning = found.warning().unwrap();
            assert!(warning.contains("auth.json") && warning.contains("chmod 600"), "{warning}");
            assert!(!warning.contains(secret), "the store's contents were read out");
        } else {
            assert_eq!(found, Finding::Private);
        }
    }
}
