//! Process inspection through `/proc` (Linux): parents, groups, liveness, environment and
//! command line of the processes a test started.

/// Pids whose parent is `pid` (zombies included).
pub fn children_of(pid: u32) -> Vec<u32> {
    all_pids().filter(|&child| stat_ids(child).is_some_and(|(ppid, ..)| ppid == pid)).collect()
}

/// Pids descending from `pid` (children, their children, …), in no particular order.
pub fn descendants_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for child in children_of(parent) {
            out.push(child);
            frontier.push(child);
        }
    }
    out
}

/// Live (non-zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    all_pids()
        .filter(|&pid| {
            stat_ids(pid).is_some_and(|(_, state, pgrp, _)| state != 'Z' && pgrp == pgid)
        })
        .collect()
}

/// (ppid, state, process group, session) from `/proc/PID/stat`.
pub fn stat_ids(pid: u32) -> Option<(u32, char, u32, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some((ppid, state, pgrp, session))
}

/// Gone, or a zombie nobody reaped yet (it no longer runs or holds ports).
pub fn is_dead(pid: u32) -> bool {
    stat_ids(pid).is_none_or(|(_, state, ..)| state == 'Z' || state == 'X')
}

/// One variable of a process's environment.
pub fn environ_var(pid: u32, name: &str) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    raw.split(|&b| b == 0).find_map(|kv| {
        let kv = String::from_utf8_lossy(kv);
        kv.strip_prefix(&format!("{name}=")).map(str::to_owned)
    })
}

/// The names in a process's environment.
pub fn environ_names(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    raw.split(|&b| b == 0)
        .filter_map(|kv| String::from_utf8_lossy(kv).split_once('=').map(|(k, _)| k.to_owned()))
        .collect()
}

/// A process's command line, arguments joined by spaces.
pub fn cmdline(pid: u32) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .replace('\0', " ")
}

/// The TCP ports a process listens on over IPv4 (its socket inodes matched against
/// `/proc/PID/net/tcp` rows in state `0A`, LISTEN).
pub fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter_map(|target| {
                    let target = target.to_string_lossy().into_owned();
                    Some(target.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|row| {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let cols: Vec<&str> = row.split_whitespace().collect();
            let (local, state, inode) = (cols.get(1)?, cols.get(3)?, cols.get(9)?);
            let listening = *state == "0A" && inodes.iter().any(|i| i == inode);
            let port = local.rsplit_once(':')?.1;
            listening.then(|| u16::from_str_radix(port, 16).ok()).flatten()
        })
        .collect()
}

fn all_pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().and_then(|s| s.parse().ok()))
}
