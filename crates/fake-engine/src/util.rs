//! Wall time, UUIDs and ISO timestamps for the fake engine (the only clock reads in the crate).

use std::time::{Duration, UNIX_EPOCH};

use rand::Rng;

/// Time since the Unix epoch (the crate's one wall-clock read).
#[allow(clippy::disallowed_methods)] // the fake engine's clock adapter
pub(crate) fn wall_now() -> Duration {
    std::time::SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    u64::try_from(wall_now().as_millis()).unwrap_or(u64::MAX)
}

/// A random UUID version 4 in its canonical lower-case form.
pub fn uuid4() -> String {
    let mut bytes: [u8; 16] = rand::rng().random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// `n` random lower-case hex digits.
pub(crate) fn random_hex(n: usize) -> String {
    let mut rng = rand::rng();
    (0..n).map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0')).collect()
}

/// `2026-11-22T00:14:34.362453Z` for a time since the epoch.
pub fn iso_utc(since_epoch: Duration) -> String {
    let secs = since_epoch.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        since_epoch.subsec_micros()
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day) (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}
