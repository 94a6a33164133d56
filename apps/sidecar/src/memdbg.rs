//! A measurement aid behind the `memdbg` feature, never in a user's build: the allocator
//! wrapped to count live heap bytes and blocks by size, and, with `BB_MEMDBG=PATH`, a line of
//! them, of mimalloc's pages (committed, and used by live blocks rounded to their size class)
//! and of the process's RSS appended to PATH when the main thread parks (at most every 5 ms),
//! with tables by size and the mappings every second and at each trim. For who holds what:
//! `BB_MEMDBG_SYSTEM=1` allocates from the system allocator instead (so heaptrack's preload
//! sees every block) and `BB_MEMDBG_EXIT=1` exits at the first trim, so heaptrack's "leaked"
//! is what was live then (BENCHMARKS.md, "Attach memory: where the growth goes").

use std::alloc::System;
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicIsize, AtomicU8, Ordering::Relaxed};
use std::time::Instant;

use bb_launch::Mimalloc;
use libmimalloc_sys::{mi_heap_area_t, mi_heap_t};

const BUCKETS: usize = 28;

static BYTES: [AtomicIsize; BUCKETS] = [const { AtomicIsize::new(0) }; BUCKETS];
static BLOCKS: [AtomicIsize; BUCKETS] = [const { AtomicIsize::new(0) }; BUCKETS];

/// mimalloc (or, with `BB_MEMDBG_SYSTEM` set, the system allocator, for heaptrack), counting
/// what is live.
pub(crate) struct Counting;

/// 0: not decided yet, 1: mimalloc, 2: the system allocator. Decided at the first call.
static WHICH: AtomicU8 = AtomicU8::new(0);

fn system() -> bool {
    match WHICH.load(Relaxed) {
        0 => {
            // SAFETY: `getenv` with a NUL-terminated name; it does not allocate.
            let set = !unsafe { libc::getenv(c"BB_MEMDBG_SYSTEM".as_ptr()) }.is_null();
            WHICH.store(if set { 2 } else { 1 }, Relaxed);
            set
        }
        w => w == 2,
    }
}

fn bucket(size: usize) -> usize {
    ((usize::BITS - size.leading_zeros()) as usize).min(BUCKETS - 1)
}

fn note(size: usize, sign: isize) {
    let b = bucket(size);
    BYTES[b].fetch_add(sign * size as isize, Relaxed);
    BLOCKS[b].fetch_add(sign, Relaxed);
}

// SAFETY: every call is forwarded to mimalloc unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { if system() { System.alloc(layout) } else { Mimalloc.alloc(layout) } };
        if !p.is_null() {
            note(layout.size(), 1);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe {
            if system() { System.alloc_zeroed(layout) } else { Mimalloc.alloc_zeroed(layout) }
        };
        if !p.is_null() {
            note(layout.size(), 1);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe {
            if system() { System.dealloc(ptr, layout) } else { Mimalloc.dealloc(ptr, layout) }
        };
        note(layout.size(), -1);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let q = unsafe {
            if system() {
                System.realloc(ptr, layout, new_size)
            } else {
                Mimalloc.realloc(ptr, layout, new_size)
            }
        };
        if !q.is_null() {
            note(layout.size(), -1);
            note(new_size, 1);
        }
        q
    }
}

unsafe extern "C" {
    fn mi_heap_main() -> *mut mi_heap_t;
}

struct State {
    path: Option<String>,
    start: Instant,
    last: Option<Instant>,
    last_full: Option<Instant>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Called on every park of the main thread.
pub(crate) fn tick() {
    report(None);
}

/// A full report now, labelled.
pub(crate) fn full(label: &str) {
    report(Some(label));
    if std::env::var_os("BB_MEMDBG_EXIT").is_some() {
        // What is live now is what heaptrack reports as leaked.
        std::process::exit(0);
    }
}

#[allow(clippy::disallowed_methods)] // the report's own timestamps, not the service's time
fn report(label: Option<&str>) {
    let Ok(mut guard) = STATE.lock() else { return };
    let state = guard.get_or_insert_with(|| State {
        path: std::env::var("BB_MEMDBG").ok(),
        start: Instant::now(),
        last: None,
        last_full: None,
    });
    let Some(path) = state.path.clone() else { return };
    let now = Instant::now();
    if label.is_none() && state.last.is_some_and(|l| now.duration_since(l).as_millis() < 5) {
        return;
    }
    state.last = Some(now);
    let full = label.is_some()
        || state.last_full.is_none_or(|l| now.duration_since(l).as_millis() >= 1000);
    if full {
        state.last_full = Some(now);
    }
    let t = now.duration_since(state.start).as_millis();
    drop(guard);
    let mut out = String::new();
    let live: isize = BYTES.iter().map(|b| b.load(Relaxed)).sum();
    let blocks: isize = BLOCKS.iter().map(|b| b.load(Relaxed)).sum();
    let areas = areas();
    let committed: usize = areas.iter().map(|a| a.committed).sum();
    let used: usize = areas.iter().map(|a| a.used_bytes).sum();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    let _ = writeln!(
        out,
        "t={t} live={live} blocks={blocks} areas_committed={committed} areas_used={used} \
         pages={} rss={} anon={} file={}",
        areas.len(),
        field("VmRSS:"),
        field("RssAnon:"),
        field("RssFile:"),
    );
    if full {
        let _ = writeln!(out, "== full {} t={t}", label.unwrap_or("periodic"));
        let _ = writeln!(out, "live by size (<= 2^k): k bytes blocks");
        for k in 0..BUCKETS {
            let (b, n) = (BYTES[k].load(Relaxed), BLOCKS[k].load(Relaxed));
            if n != 0 {
                let _ = writeln!(out, "  {k} {b} {n}");
            }
        }
        let mut by_size: std::collections::BTreeMap<usize, (usize, usize, usize, usize)> =
            Default::default();
        for a in &areas {
            let e = by_size.entry(a.block_size).or_default();
            e.0 += 1;
            e.1 += a.committed;
            e.2 += a.used_bytes;
            e.3 += a.used_blocks;
        }
        let _ = writeln!(out, "mimalloc pages by block size: size pages committed used blocks");
        for (size, (pages, c, u, n)) in by_size {
            let _ = writeln!(out, "  {size} {pages} {c} {u} {n}");
        }
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let _ = writeln!(out, "smaps (Rss >= 64 kB): rss anon name");
        let mut head = String::new();
        let mut rss = 0u64;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if first.contains('-') && !first.ends_with(':') {
                head = line.to_owned();
            } else if first == "Rss:" {
                rss = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
            } else if first == "Anonymous:" {
                let anon: u64 =
                    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
                if rss >= 64 {
                    let _ = writeln!(out, "  {rss} {anon} {head}");
                }
            }
        }
    }
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = f.write_all(out.as_bytes());
    }
}

struct Area {
    committed: usize,
    used_bytes: usize,
    used_blocks: usize,
    block_size: usize,
}

unsafe extern "C" fn visit(
    _heap: *const mi_heap_t,
    area: *const mi_heap_area_t,
    _block: *mut c_void,
    _size: usize,
    arg: *mut c_void,
) -> bool {
    // SAFETY: `arg` is the `Vec<Area>` passed by `areas`, `area` is valid for the call.
    let (areas, area) = unsafe { (&mut *(arg as *mut Vec<Area>), &*area) };
    areas.push(Area {
        committed: area.committed,
        used_bytes: area.used * area.block_size,
        used_blocks: area.used,
        block_size: area.block_size,
    });
    true
}

fn areas() -> Vec<Area> {
    let mut areas: Vec<Area> = Vec::with_capacity(1024);
    // SAFETY: the visitor only reads the area and pushes to the vector passed as `arg`.
    unsafe {
        libmimalloc_sys::mi_heap_visit_blocks(
            mi_heap_main(),
            false,
            Some(visit),
            (&mut areas as *mut Vec<Area>).cast(),
        );
    }
    areas
}
