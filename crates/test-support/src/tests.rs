//! What `/proc` tells about a child.

use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::procfs::{
    children_of, cmdline, descendants_of, environ_names, environ_var, group_members, is_dead,
    stat_ids,
};

#[test]
fn proc_shows_a_child_its_environment_and_its_death() {
    let mut child = Command::new("sleep")
        .arg("30")
        .env("BB_TEST_SUPPORT_MARK", "here")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let me = std::process::id();
    assert!(children_of(me).contains(&pid));
    assert!(descendants_of(me).contains(&pid));
    // A read of `/proc/PID/cmdline` can come back empty while the child is still being set
    // up (seen once under load on a CI run): wait for it to say something.
    let mut line = String::new();
    crate::eventually(Duration::from_secs(10), "the child's command line", || {
        line = cmdline(pid);
        !line.is_empty()
    });
    assert!(line.starts_with("sleep 30"), "{line}");
    assert_eq!(environ_var(pid, "BB_TEST_SUPPORT_MARK").as_deref(), Some("here"));
    assert!(environ_names(pid).iter().any(|n| n == "BB_TEST_SUPPORT_MARK"));
    let (ppid, _, pgrp, _) = stat_ids(pid).unwrap();
    assert_eq!(ppid, me);
    assert!(group_members(pgrp).contains(&pid));
    assert!(!is_dead(pid));

    child.kill().unwrap();
    child.wait().unwrap();
    assert!(is_dead(pid));
    assert!(!children_of(me).contains(&pid));
}

#[test]
fn listening_ports_are_those_a_process_listens_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The connection has a row on the same port too; only the LISTEN row counts.
    let _client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let ports = crate::procfs::listening_ports(std::process::id());
    assert!(ports.contains(&port), "{port} not in {ports:?}");
    drop(listener);
    assert!(!crate::procfs::listening_ports(std::process::id()).contains(&port));
}
