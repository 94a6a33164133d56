//! The scripted mock LLM (`mock_llm.py`, an OpenAI-compatible server on loopback), killed on
//! drop.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::eventually;

/// A running mock LLM; the process is killed and reaped when this is dropped.
#[derive(Debug)]
pub struct MockLlm {
    child: Child,
    port: u16,
}

impl MockLlm {
    /// Starts `mock_llm.py` on a free loopback port (written to `dir/mock.port`), streaming
    /// chunks `chunk_delay` apart and its `slow` directive for at most 60 s.
    pub(crate) fn start(dir: &Path, chunk_delay: Duration) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mock_llm.py");
        let port_file = dir.join("mock.port");
        let child = Command::new("python3")
            .arg(script)
            .args(["--host", "127.0.0.1", "--port", "0", "--slow-seconds", "60"])
            .arg("--delay")
            .arg(chunk_delay.as_secs_f64().to_string())
            .arg("--port-file")
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 is needed for the mock LLM");
        // Owned from here on: a failed wait below drops it, which kills it.
        let mut mock = Self { child, port: 0 };
        eventually(Duration::from_secs(20), "the mock LLM port file", || {
            mock.port = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            mock.port != 0
        });
        mock
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
