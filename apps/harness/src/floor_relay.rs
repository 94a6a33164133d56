//! `bb-harness floor-relay`: the least a process can do for what `bench-e2e` measures of a
//! sidecar on the Kilo shape, to show the floor of the machine: it answers every request
//! line with `ok`, reads the engine's `GET /event` stream and writes each event's data as
//! one line the moment it arrives (one wake-up, one read and one write per event, on one
//! thread, stdin and stdout driven by the reactor). No parsing beyond finding the events,
//! no batching, no validation: `bench-e2e --sidecar` pointed at a script that runs it gives
//! the CPU per event of this floor under the same load.
//!
//! With `BB_GATHER_MS` set (the variable that sets the sidecar's pacing pause), it sleeps that
//! long after each wake-up that wrote events, before it waits again: the floor of a relay
//! that gathers for as long as the sidecar may, so each wake-up reads what arrived
//! meanwhile.

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::unix::pipe;

/// Arguments: the sidecar's, of which only `--engine-url` is read.
#[derive(Debug, clap::Args)]
pub(crate) struct FloorArgs {
    /// The sidecar's flags.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// Relays until stdin closes.
pub(crate) async fn run(args: FloorArgs) -> anyhow::Result<()> {
    let url = args
        .args
        .iter()
        .skip_while(|a| *a != "--engine-url")
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("--engine-url URL is required"))?;
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut engine = TcpStream::connect(addr).await?;
    engine.set_nodelay(true)?;
    engine.write_all(format!("GET /event HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes()).await?;
    let stdin = pipe::OpenOptions::new().open_receiver("/proc/self/fd/0")?;
    let mut out = pipe::OpenOptions::new().open_sender("/proc/self/fd/1")?;
    let mut requests = BufReader::new(stdin).lines();
    let (mut buf, mut stream, mut line) = (vec![0u8; 64 * 1024], Vec::new(), Vec::new());
    let mut in_body = false;
    let gather = std::env::var("BB_GATHER_MS")
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map(std::time::Duration::from_millis)
        .filter(|pause| !pause.is_zero());
    loop {
        tokio::select! {
            request = requests.next_line() => {
                let Some(request) = request? else { return Ok(()) };
                let request: serde_json::Value = serde_json::from_str(&request)?;
                let response = serde_json::json!({"v": 1, "kind": "res", "id": request["id"],
                    "ok": true, "result": {}});
                out.write_all(format!("{response}\n").as_bytes()).await?;
            }
            read = engine.read(&mut buf) => {
                let n = read?;
                if n == 0 {
                    return Ok(());
                }
                stream.extend_from_slice(&buf[..n]);
                if !in_body {
                    let Some(end) = stream.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
                    stream.drain(..end + 4);
                    in_body = true;
                }
                line.clear();
                while let Some(end) = stream.windows(2).position(|w| w == b"\n\n") {
                    if let Some(data) = stream[..end].strip_prefix(b"data: ") {
                        line.extend_from_slice(b"{\"v\":1,\"kind\":\"evt\",\"topic\":\"bb/events\",\"payload\":");
                        line.extend_from_slice(data);
                        line.extend_from_slice(b"}\n");
                    }
                    stream.drain(..end + 2);
                }
                if !line.is_empty() {
                    out.write_all(&line).await?;
                    if let Some(pause) = gather {
                        std::thread::sleep(pause);
                    }
                }
            }
        }
    }
}
