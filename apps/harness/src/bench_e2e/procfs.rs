//! What the bench reads of the measured process in `/proc`: CPU time per thread (nanoseconds,
//! from `schedstat`), context switches, resident memory.

use std::fs;

/// A sample of every live thread of a process.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sample {
    /// CPU time of the threads, nanoseconds (`/proc/PID/task/*/schedstat`, first field).
    pub(super) cpu_ns: u64,
    /// Voluntary context switches (the thread went to sleep: one wake-up each).
    pub(super) voluntary: u64,
    /// Involuntary context switches (preempted).
    pub(super) involuntary: u64,
    /// Live threads.
    pub(super) threads: u64,
}

impl Sample {
    /// Sums the threads of `pid`. A thread that exits between two samples takes its time with
    /// it: compare `threads`.
    pub(super) fn of(pid: u32) -> Self {
        let mut sample = Self::default();
        let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else { return sample };
        for task in tasks.flatten() {
            let dir = task.path();
            let Ok(schedstat) = fs::read_to_string(dir.join("schedstat")) else { continue };
            sample.threads += 1;
            sample.cpu_ns += schedstat
                .split_whitespace()
                .next()
                .and_then(|ns| ns.parse::<u64>().ok())
                .unwrap_or(0);
            let status = fs::read_to_string(dir.join("status")).unwrap_or_default();
            sample.voluntary += field(&status, "voluntary_ctxt_switches:");
            sample.involuntary += field(&status, "nonvoluntary_ctxt_switches:");
        }
        sample
    }

    /// What happened between `before` and `self`.
    pub(super) fn since(self, before: Self) -> Self {
        Self {
            cpu_ns: self.cpu_ns.saturating_sub(before.cpu_ns),
            voluntary: self.voluntary.saturating_sub(before.voluntary),
            involuntary: self.involuntary.saturating_sub(before.involuntary),
            threads: self.threads,
        }
    }
}

fn field(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// A `kB` field of `/proc/PID/status` (`VmRSS:`, `VmHWM:`), in bytes.
pub(super) fn status_bytes(pid: u32, key: &str) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// utime + stime of the whole process (threads that exited included), in seconds; the
/// kernel counts it in 10 ms ticks.
pub(super) fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    ticks as f64 / 100.0
}
