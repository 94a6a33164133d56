//! What the Kilo event mapping reads of an event's body, in one typed pass over its text
//! (no tree): the session, the run status, the part's tool state, the session or message
//! `info`, the times and turn the webview event is stamped with, and what classifies it.
//! The router does not read bodies: these structs are the one reading of an event's
//! payload ([`session_of`] is the same reading, for callers that only want the session).

use bb_normalize::class::{EventClass, KiloFields};
use bb_normalize::kilo::{Delta, ErrorFields, InfoFields, InfoParts, TextPart};
use bb_payload::{LooseF64, LooseObj, LooseStr, LooseU64, Payload};
use bb_protocol::v1::SessionSummary;
use serde::Deserialize;
use std::any::Any;
use std::mem::take;
use std::sync::Arc;

/// The fields of `properties` the mapping reads; each absent when of another shape.
/// The session is `sessionID`, else `info.sessionID`, else `part.sessionID`
/// ([`Facts::session`]).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Facts<'a> {
    #[serde(rename = "sessionID", borrow)]
    pub(crate) session_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) status: LooseObj<Status<'a>>,
    #[serde(borrow)]
    pub(crate) part: LooseObj<Part<'a>>,
    #[serde(borrow)]
    pub(crate) info: LooseObj<Info<'a>>,
    pub(crate) time: LooseF64,
    pub(crate) turn: LooseU64,
    #[serde(rename = "requestID", borrow)]
    pub(crate) request_id: LooseStr<'a>,
    /// A delta's message, part, field and text (read for the batcher and the reducers).
    #[serde(rename = "messageID", borrow)]
    pub(crate) message_id: LooseStr<'a>,
    #[serde(rename = "partID", borrow)]
    pub(crate) part_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) field: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) delta: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Status<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Part<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: LooseStr<'a>,
    #[serde(rename = "sessionID", borrow)]
    pub(crate) session_id: LooseStr<'a>,
    #[serde(rename = "callID", borrow)]
    pub(crate) call_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) state: LooseObj<ToolState<'a>>,
    pub(crate) time: LooseObj<Times>,
    /// A text part's id, message and text (read for the reducers).
    #[serde(borrow)]
    pub(crate) id: LooseStr<'a>,
    #[serde(rename = "messageID", borrow)]
    pub(crate) message_id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) text: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ToolState<'a> {
    #[serde(borrow)]
    pub(crate) status: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) input: LooseObj<Input<'a>>,
    #[serde(borrow)]
    pub(crate) metadata: LooseObj<Metadata<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Input<'a> {
    #[serde(rename = "filePath", borrow)]
    pub(crate) file_path: LooseStr<'a>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Metadata<'a> {
    #[serde(borrow)]
    pub(crate) diff: LooseStr<'a>,
}

/// A session's or message's `info`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Info<'a> {
    #[serde(borrow)]
    pub(crate) id: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) role: LooseStr<'a>,
    #[serde(borrow)]
    pub(crate) title: LooseStr<'a>,
    #[serde(rename = "sessionID", borrow)]
    pub(crate) session_id: LooseStr<'a>,
    /// A session's parent (a sub-agent's session), or an assistant message's user message.
    #[serde(rename = "parentID", borrow)]
    pub(crate) parent_id: LooseStr<'a>,
    /// A message's error: present and not null (`LooseObj(None)` when not an object).
    #[serde(borrow)]
    pub(crate) error: Option<LooseObj<ErrorFields<'a>>>,
    pub(crate) time: LooseObj<Times>,
}

/// A `time` object: every moment Kilo stamps.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Times {
    pub(crate) start: LooseF64,
    pub(crate) end: LooseF64,
    pub(crate) created: LooseF64,
    pub(crate) updated: LooseF64,
    /// Present and not null (`None` for null), and its number.
    pub(crate) completed: Option<LooseF64>,
}

/// What a `sync` event's `syncEvent` says.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SyncFields<'a> {
    #[serde(rename = "aggregateID", borrow)]
    pub(crate) aggregate_id: LooseStr<'a>,
    pub(crate) seq: LooseU64,
}

impl SyncFields<'_> {
    /// The session (`aggregateID`), when it names one.
    pub(crate) fn session(&self) -> Option<&str> {
        self.aggregate_id.get().filter(|s| !s.is_empty())
    }
}

/// The session an event of `event_type` with `body` (its `properties`, or a `sync`'s
/// `syncEvent`) belongs to, read as the mapping reads it.
pub(crate) fn session_of(event_type: &str, body: &Payload) -> Option<String> {
    if event_type == "sync" {
        body.read::<SyncFields<'_>>().session().map(str::to_owned)
    } else {
        body.read::<Facts<'_>>().session().map(str::to_owned)
    }
}

/// Whether the mapping's typed read takes `text` (a body the router left unread).
pub(crate) fn reads(text: &str) -> bool {
    parse_into(text, &mut Facts::default()).is_ok()
}

/// The mapping's typed read of `text` (a body the router left unread) into `facts` (as
/// [`Facts::default`] when called): the common flat body read by hand
/// ([`crate::flat::read_into`]), any other by serde, with the same result. Written in
/// place: a `Facts` is most of a kilobyte.
pub(crate) fn parse_into<'a>(
    text: &'a str,
    facts: &mut Facts<'a>,
) -> Result<(), serde_json::Error> {
    if !crate::flat::read_into(text, facts) {
        *facts = serde_json::from_str(text)?;
    }
    Ok(())
}

/// What the mapping keeps on an event's payload of what it read for the batcher and the
/// reducers (`bb_normalize::kilo`: an [`InfoFields`], a
/// [`TextPartMemo`](bb_normalize::kilo::TextPartMemo) or a
/// [`DeltaMemo`](bb_normalize::kilo::DeltaMemo)), so that they do not read the body again; made in the `Arc` the payload
/// keeps it in ([`Payload::set_memo_arc`]), not moved on its way there.
pub(crate) type Memo = Arc<dyn Any + Send + Sync>;

impl Facts<'_> {
    /// What the batcher and the reducers will read of an event of `event_type` and `class`
    /// whose body this is, where they read it: a delta's fields, a text or reasoning
    /// part's, the `info` of an event with one or of an event whose reducer reads it.
    /// Its strings are taken (one that was unescaped is not copied again): the last use
    /// of what they read.
    /// `text`: the body's text these facts were read from, if they were (a delta's memo
    /// then knows where its string is).
    pub(crate) fn memo(
        &mut self,
        event_type: &str,
        class: EventClass,
        text: Option<&str>,
    ) -> Option<Memo> {
        use EventClass as C;
        match (event_type, class) {
            ("message.part.delta", _) => Some(Arc::new(Delta::memo(
                [
                    take(&mut self.message_id),
                    take(&mut self.part_id),
                    take(&mut self.field),
                    take(&mut self.delta),
                ],
                text,
            ))),
            ("message.part.updated", C::AssistantStream | C::ReasoningStream) => {
                let part = self.part.0.as_mut();
                let fields =
                    part.map(|p| [take(&mut p.id), take(&mut p.message_id), take(&mut p.text)]);
                Some(Arc::new(TextPart::memo(fields, text)))
            }
            _ => match self.info.0.as_mut() {
                Some(info) => Some(Arc::new(info.memo())),
                None if class == C::SessionInfo || event_type == "message.updated" => {
                    Some(Arc::new(InfoFields::memo(None)))
                }
                None => None,
            },
        }
    }

    /// The session the event belongs to: the first non-empty of `sessionID`,
    /// `info.sessionID` and `part.sessionID`.
    pub(crate) fn session(&self) -> Option<&str> {
        fn named<'b>(s: &'b LooseStr<'_>) -> Option<&'b str> {
            s.get().filter(|s| !s.is_empty())
        }
        named(&self.session_id)
            .or_else(|| self.info.get().and_then(|i| named(&i.session_id)))
            .or_else(|| self.part.get().and_then(|p| named(&p.session_id)))
    }

    /// What classifies the event besides its type (see `classify_kilo_fields`).
    pub(crate) fn kilo_fields(&self) -> KiloFields<'_> {
        fn non_empty<'b>(s: &'b LooseStr<'_>) -> Option<&'b str> {
            s.get().filter(|s| !s.is_empty())
        }
        let part = self.part.get();
        KiloFields {
            role: self.info.get().and_then(|i| non_empty(&i.role)),
            part: part.and_then(|p| non_empty(&p.kind)),
            tool_status: part.and_then(|p| p.state.get()).and_then(|s| non_empty(&s.status)),
        }
    }
}

impl Info<'_> {
    /// What the reducers read of this `info` ([`InfoFields`]), owned, to be kept on the
    /// event's payload so that they do not read the body again.
    /// Its strings are taken (one that was unescaped is not copied again).
    pub(crate) fn memo(&mut self) -> InfoFields<'static> {
        InfoFields::memo(Some(InfoParts {
            id: take(&mut self.id),
            role: take(&mut self.role),
            title: take(&mut self.title),
            error: self.error.take(),
            completed: self.time.get().map(|t| t.completed.is_some()),
        }))
    }

    /// The `info` of a session event as a summary (`id`, `title`, `time.updated`, and the
    /// parent session of a sub-agent's: `parentID`).
    pub(crate) fn session_summary(&self) -> Option<SessionSummary> {
        Some(SessionSummary {
            session_id: self.id.get()?.to_owned(),
            title: self.title.get().map(str::to_owned),
            status: None,
            updated_at: self.time.get().and_then(|t| t.updated.0),
            queued_prompts: None,
            parent_id: self.parent_id.get().filter(|p| !p.is_empty()).map(str::to_owned),
            pending_permission_count: None,
            folder: None,
        })
    }
}
