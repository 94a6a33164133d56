//! The scripted mock LLM (`mock_llm.py`, an OpenAI-compatible server on loopback), killed on
//! drop.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bb_test_support::eventually;

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

    /// Queues directives (`POST /_mock/script`): each is the reply to one agent request (a
    /// request that offers tools), before any directive written in a message. A directive
    /// may hold JSON (`tool:task:{"description": …}`), which a message cannot carry.
    pub fn script(&self, directives: &[&str]) {
        let body = serde_json::json!({ "queue": directives }).to_string();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            stream,
            "POST /_mock/script HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(
            answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
            "{answer}"
        );
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
