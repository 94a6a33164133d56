//! `GET /v1/sessions/{id}/events`: the resume rules, the connect-time snapshot and the SSE
//! framing of the engine (`id:` and `data:` as two chunks), with injected faults.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::stream::{self, Stream, StreamExt};
use tokio::sync::mpsc;

use crate::engine::EngineState;
use crate::error::ApiError;
use crate::ring::StoredEvent;

const CONTENT_TYPE: &str = "text/event-stream; charset=utf-8";

fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn invalid_query(field: &str, value: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
        serde_json::json!({"errors": [{"type": "parsing", "loc": ["query", field], "msg": "invalid value", "input": value}]}),
    )
}

fn empty_stream() -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], Body::empty()).into_response()
}

pub(crate) async fn events(
    State(state): State<Arc<EngineState>>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let replay = match query.get("replay") {
        Some(v) => parse_bool(v).ok_or_else(|| invalid_query("replay", v))?,
        None => false,
    };
    let limit = match query.get("limit") {
        Some(v) => Some(v.parse::<usize>().map_err(|_| invalid_query("limit", v))?),
        None => None,
    };
    let header_token =
        headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    state.log_stream(crate::engine::StreamRequest {
        session_id: id.clone(),
        last_event_id: header_token.clone(),
        replay: query.get("replay").cloned(),
    });
    // An empty `from_id` is ignored (the header then counts).
    let token =
        query.get("from_id").filter(|v| !v.is_empty()).cloned().or_else(|| header_token.clone());
    let Some(session) = state.session(&id) else {
        // The engine: with `Last-Event-ID` an unknown session is a 404; without, a 200 with an
        // empty, terminated body (with or without a token configured).
        if header_token.is_some() {
            return Err(ApiError::session_not_found());
        }
        return Ok(empty_stream());
    };
    let plain = token.is_none() && !replay;
    let subscription = session
        .subscribe(token.as_deref(), replay, limit)
        .map_err(|_| ApiError::window_exceeded())?;
    let mut first: Vec<Arc<StoredEvent>> = Vec::new();
    if plain {
        first.push(session.connect_snapshot());
    }
    first.extend(subscription.replay);
    let plan = ConnectionPlan { faults: state.faults(), cut_after: state.connection_cut() };
    let body = Body::from_stream(frame(first, subscription.live, plan));
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response())
}

/// The faults applied to one connection.
#[derive(Debug)]
struct ConnectionPlan {
    faults: crate::config::Faults,
    cut_after: Option<usize>,
}

enum Source {
    Replay(std::vec::IntoIter<Arc<StoredEvent>>),
    Done,
}

struct Conn {
    source: Source,
    live: Option<mpsc::UnboundedReceiver<Arc<StoredEvent>>>,
    plan: ConnectionPlan,
    written: usize,
    /// Sequenced events this connection had to write (replayed or live), dropped included.
    seen: u64,
}

/// What the stream does next.
enum Step {
    Write(Arc<StoredEvent>),
    Cut,
    Silent,
    End,
}

impl Conn {
    /// The next event to write. Drops apply to ring replays and live events alike, per
    /// connection, like the engine's `BREADBOARD_CLI_DROP_RATE` (the ring keeps them).
    async fn next_event(&mut self) -> Option<Arc<StoredEvent>> {
        loop {
            let event = self.next_source_event().await?;
            if event.seq.is_none() {
                return Some(event);
            }
            self.seen += 1;
            if let Some(n) = self.plan.faults.drop_every
                && n > 0
                && self.seen.is_multiple_of(n)
            {
                continue;
            }
            return Some(event);
        }
    }

    async fn next_source_event(&mut self) -> Option<Arc<StoredEvent>> {
        if let Source::Replay(iter) = &mut self.source {
            if let Some(event) = iter.next() {
                return Some(event);
            }
            self.source = Source::Done;
        }
        match &mut self.live {
            Some(rx) => rx.recv().await,
            // The run loop ended before this connection: stay open and silent.
            None => std::future::pending().await,
        }
    }

    async fn step(&mut self) -> Step {
        if self.plan.cut_after.is_some_and(|n| self.written >= n) {
            return Step::Cut;
        }
        if self.plan.faults.stall_after.is_some_and(|n| self.written >= n) {
            return Step::Silent;
        }
        match self.next_event().await {
            Some(event) => {
                if self.plan.faults.latency_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(self.plan.faults.latency_ms)).await;
                }
                self.written += 1;
                Step::Write(event)
            }
            None => Step::End,
        }
    }
}

/// The SSE body: each event as two chunks, `id: <id>\n` then `data: <json>\n\n`.
fn frame(
    first: Vec<Arc<StoredEvent>>,
    live: Option<mpsc::UnboundedReceiver<Arc<StoredEvent>>>,
    plan: ConnectionPlan,
) -> impl Stream<Item = Result<Bytes, io::Error>> + Send {
    let conn = Conn { source: Source::Replay(first.into_iter()), live, plan, written: 0, seen: 0 };
    stream::unfold(Some(conn), |conn| async move {
        let mut conn = conn?;
        match conn.step().await {
            Step::Write(event) => {
                let chunks = vec![
                    Ok(Bytes::from(format!("id: {}\n", event.sse_id()))),
                    Ok(Bytes::from(format!("data: {}\n\n", event.json))),
                ];
                Some((stream::iter(chunks), Some(conn)))
            }
            Step::Cut => {
                // Let the server flush what was written (headers included) before aborting,
                // so the peer sees the events and then a broken body.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let cut =
                    vec![Err(io::Error::new(io::ErrorKind::ConnectionAborted, "injected cut"))];
                Some((stream::iter(cut), None))
            }
            Step::Silent => {
                std::future::pending::<()>().await;
                None
            }
            Step::End => None,
        }
    })
    .flatten()
}
