//! Who may connect: the per-run token (constant-time compare), the `Origin` allow-list and
//! the `Host` check against loopback names (cross-site WebSocket hijacking, DNS rebinding).

use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};

/// A fresh random token: 32 bytes from the thread's CSPRNG (seeded by the OS), hex-encoded.
pub fn fresh_token() -> SecretString {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    SecretString::from(hex)
}

/// Whether `given` equals the token, in time independent of where they differ.
pub fn token_matches(token: &SecretString, given: Option<&str>) -> bool {
    let Some(given) = given else { return false };
    let want = token.expose_secret().as_bytes();
    let given = given.as_bytes();
    if want.len() != given.len() {
        return false;
    }
    want.iter().zip(given).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// The loopback names a `Host` header may carry (with the gateway's port).
pub fn host_allowed(host: Option<&str>, port: u16) -> bool {
    let Some(host) = host else { return false };
    let host = host.to_ascii_lowercase();
    ["127.0.0.1", "localhost", "[::1]"].iter().any(|name| host == format!("{name}:{port}"))
}

/// The origins a page may connect from: the gateway's own (under each loopback name), the
/// Tauri webview's, and the configured extras. A request without `Origin` (a non-browser
/// client, which holds the token) is allowed; a browser always sends one.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    allowed: Vec<String>,
}

impl OriginPolicy {
    /// The policy for a gateway on `port` with `extras` allowed too.
    pub fn new(port: u16, extras: &[String]) -> Self {
        let mut allowed: Vec<String> = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .map(|name| format!("http://{name}:{port}"))
            .collect();
        allowed.push("tauri://localhost".to_owned());
        allowed.push("http://tauri.localhost".to_owned());
        allowed.extend(extras.iter().map(|o| o.trim_end_matches('/').to_ascii_lowercase()));
        Self { allowed }
    }

    /// Whether a request with this `Origin` header may connect.
    pub fn allows(&self, origin: Option<&str>) -> bool {
        match origin {
            None => true,
            Some(origin) => {
                let origin = origin.to_ascii_lowercase();
                self.allowed.contains(&origin)
            }
        }
    }
}
