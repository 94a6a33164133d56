//! `FakeTransport`: an in-memory [`EngineTransport`] for tests and fault injection —
//! scripted streams (chunks, then end, stall or error) and canned REST answers.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt as _;
use tokio::sync::mpsc;

use crate::transport::{
    ByteStream, EngineRequest, EngineResponse, EngineTransport, HttpMethod, TransportError,
};

/// How a scripted stream ends after its chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeEnd {
    /// The server closes the stream.
    Eof,
    /// The server stops sending but keeps the connection open.
    Stall,
    /// The connection breaks.
    Error(TransportError),
}

/// One answer to `open_stream`.
#[derive(Debug)]
pub enum FakeStream {
    /// The stream cannot be opened.
    Refuse(TransportError),
    /// These chunks, then `end`.
    Script {
        /// Body chunks, in order.
        chunks: Vec<Bytes>,
        /// What follows them.
        end: FakeEnd,
    },
    /// Chunks pushed by the test as it goes; dropping the sender ends the stream.
    Live(mpsc::UnboundedReceiver<Result<Bytes, TransportError>>),
}

impl FakeStream {
    /// A scripted stream of string chunks.
    pub fn script<I, S>(chunks: I, end: FakeEnd) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Script { chunks: chunks.into_iter().map(|c| Bytes::from(c.into())).collect(), end }
    }
}

#[derive(Debug, Default)]
struct State {
    streams: VecDeque<FakeStream>,
    routes: HashMap<(HttpMethod, String), Result<EngineResponse, TransportError>>,
    requests: Vec<EngineRequest>,
}

/// In-memory engine: answers `open_stream` from a queue and `request` from canned routes
/// (method + path; unknown routes answer 404). Records every request.
#[derive(Debug, Clone, Default)]
pub struct FakeTransport {
    state: Arc<Mutex<State>>,
}

impl FakeTransport {
    /// An engine with no streams and no routes.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues the answer to the next `open_stream`.
    pub fn push_stream(&self, stream: FakeStream) {
        self.lock().streams.push_back(stream);
    }

    /// Queues a live stream and returns its sender.
    pub fn push_live_stream(&self) -> mpsc::UnboundedSender<Result<Bytes, TransportError>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.push_stream(FakeStream::Live(rx));
        tx
    }

    /// Answers `method path` with a 200 JSON body from now on.
    pub fn route_json(&self, method: HttpMethod, path: &str, body: &serde_json::Value) {
        let response = EngineResponse {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Bytes::from(body.to_string()),
        };
        self.route(method, path, Ok(response));
    }

    /// Answers `method path` with `answer` from now on.
    pub fn route(
        &self,
        method: HttpMethod,
        path: &str,
        answer: Result<EngineResponse, TransportError>,
    ) {
        self.lock().routes.insert((method, path.to_owned()), answer);
    }

    /// Every request seen so far (streams and REST), in order.
    pub fn requests(&self) -> Vec<EngineRequest> {
        self.lock().requests.clone()
    }
}

#[async_trait]
impl EngineTransport for FakeTransport {
    async fn request(&self, request: EngineRequest) -> Result<EngineResponse, TransportError> {
        let mut state = self.lock();
        let key = (request.method, request.path.clone());
        state.requests.push(request);
        state.routes.get(&key).cloned().unwrap_or_else(|| {
            Err(TransportError::Http { status: 404, body: format!("no route {key:?}") })
        })
    }

    async fn open_stream(&self, request: EngineRequest) -> Result<ByteStream, TransportError> {
        let next = {
            let mut state = self.lock();
            state.requests.push(request);
            state.streams.pop_front()
        };
        match next {
            None => Err(TransportError::Connect("no scripted stream left".into())),
            Some(FakeStream::Refuse(err)) => Err(err),
            Some(FakeStream::Script { chunks, end }) => {
                let head = futures_util::stream::iter(chunks.into_iter().map(Ok));
                let tail: ByteStream = match end {
                    FakeEnd::Eof => Box::pin(futures_util::stream::empty()),
                    FakeEnd::Stall => Box::pin(futures_util::stream::pending()),
                    FakeEnd::Error(err) => Box::pin(futures_util::stream::iter([Err(err)])),
                };
                Ok(Box::pin(head.chain(tail)))
            }
            Some(FakeStream::Live(rx)) => {
                Ok(Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|item| (item, rx))
                })))
            }
        }
    }
}
