//! The fault schedule: one fault every `every` seconds until the deadline, the first round
//! injecting every kind once in a seeded order, then seeded picks. Faults do not overlap: a
//! window is back (reattached, reading) and a stall over before the next fault, so each
//! fault is checked on its own.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::driver::Rng;
use super::{Bridge, Injected, Rig};

/// The kinds of fault, as the summary names them.
const KINDS: [&str; 7] = [
    "engineKill",
    "streamStall",
    "streamCut",
    "listenSidecarKill",
    "stdioSidecarKill",
    "windowDetach",
    "slowReader",
];

/// When and how long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    pub(crate) every: Duration,
    pub(crate) stall: Duration,
    pub(crate) seed: u64,
}

/// The longest a window stays away or unread beyond its minimum: under half the interval.
fn away_ms(schedule: &Schedule) -> u64 {
    let half = u64::try_from(schedule.every.as_millis() / 2).unwrap_or(u64::MAX);
    half.saturating_sub(1000).max(1)
}

/// Injects faults until `until`; the counts by kind.
pub(crate) async fn inject(
    rig: &Arc<Rig>,
    bridges: &Arc<Vec<Bridge>>,
    schedule: &Schedule,
    until: Instant,
) -> Injected {
    let mut rng = Rng::new(schedule.seed ^ 0x5EED);
    let mut order: Vec<&'static str> = KINDS.to_vec();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut injected: Injected = KINDS.iter().map(|k| (*k, 0)).collect();
    let mut next = super::now() + schedule.every / 2;
    let mut n = 0usize;
    let mut stalled_until: Option<Instant> = None;
    loop {
        let wake = stalled_until.map_or(next, |s| s.min(next));
        if wake >= until {
            tokio::time::sleep_until(until).await;
            break;
        }
        tokio::time::sleep_until(wake).await;
        if stalled_until.is_some_and(|s| s <= super::now()) {
            rig.proxy.set_stalled(false);
            stalled_until = None;
        }
        if super::now() < next {
            continue;
        }
        next += schedule.every;
        let kind = match order.get(n) {
            Some(kind) => *kind,
            None => KINDS[rng.below(KINDS.len() as u64) as usize],
        };
        n += 1;
        tracing::info!(kind, "soak: injecting");
        match kind {
            "engineKill" => {
                if let Some(engine) = rig.engine.lock().await.take() {
                    engine.kill().await;
                }
                rig.engine_epoch.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(500)).await;
                if let Err(e) = rig.start_engine().await {
                    tracing::error!("soak: the engine did not restart: {e:#}");
                }
            }
            "streamStall" => {
                rig.proxy.set_stalled(true);
                let over = super::now() + schedule.stall;
                stalled_until = Some(over);
                next = next.max(over + schedule.every / 2);
            }
            "streamCut" => rig.proxy.cut(),
            "listenSidecarKill" => {
                if let Some(listen) = rig.listen.lock().await.take() {
                    listen.kill().await;
                }
                if let Err(e) = rig.start_listen().await {
                    tracing::error!("soak: the --listen sidecar did not restart: {e:#}");
                }
            }
            "stdioSidecarKill" => {
                let w = &bridges[0].windows[0];
                w.restart_bridge();
                let rig = Arc::clone(rig);
                let w = w.clone();
                let before = w.bridge_pid.load(Ordering::SeqCst);
                tokio::spawn(async move {
                    for _ in 0..600 {
                        let pid = w.bridge_pid.load(Ordering::SeqCst);
                        if pid != before {
                            rig.sampler.watch("stdio", pid);
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                });
            }
            "windowDetach" => {
                // A socket or WebSocket window (closing a stdio window ends its sidecar).
                let away: Vec<_> = bridges.iter().skip(1).flat_map(|b| &b.windows).collect();
                let w = away[rng.below(away.len() as u64) as usize];
                w.detach(Duration::from_millis(500 + rng.below(away_ms(schedule))));
            }
            _ => {
                let all: Vec<_> = bridges.iter().flat_map(|b| &b.windows).collect();
                let w = all[rng.below(all.len() as u64) as usize];
                w.pause(Duration::from_millis(1000 + rng.below(away_ms(schedule))));
            }
        }
        *injected.entry(kind).or_default() += 1;
    }
    rig.proxy.set_stalled(false);
    injected
}
