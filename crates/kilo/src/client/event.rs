//! One Kilo `GET /event` event, kept as sent: its type and id read from the envelope, its
//! body kept as text, unread (the adapter's mapping reads it once, session included).

use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

use bb_payload::{EventId, Payload};
use memchr::memmem::Finder;
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// An event of the Kilo stream: its type and id, and its body as sent (ids untouched). The body is what the bridge forwards: `properties`, or `syncEvent` for
/// `sync`; the other top-level fields (and the `/global/event` wrapper) are not kept.
///
/// An event in Kilo's own layout is split by the router without reading its body
/// ([`KiloEvent::split`]): the body is validated by the mapping's one typed read of it, and
/// until then [`KiloEvent::is_unread`] says so (the event's data is kept to be read the
/// usual way should the body not pass).
#[derive(Debug, Clone)]
pub struct KiloEvent {
    /// The event's `id` (`evt_…`), when it has one: kept inline, as the webview event
    /// carries it ([`EventId`]).
    pub id: Option<EventId>,
    /// The event's `type` (`message.part.delta`, `sync`, …): a known one borrowed
    /// ([`super::event_type`]).
    pub event_type: Cow<'static, str>,
    /// `properties` (`syncEvent` for `sync`), `null` when absent; kept as text when the event
    /// has the usual shape.
    pub body: Payload,
    /// While its body is unread, what the event's data held around it.
    pub(crate) unread: Option<Unread>,
}

/// What an event split at its body ([`KiloEvent::split`]) was split from: its data, whole,
/// as sent. Kept whole rather than as the pieces around the body: cutting the body out of
/// the data in place moved it to the front and shrank the text (a reallocation), and the
/// wrapper's head was a copy of its own, for every event.
#[derive(Debug, Clone)]
pub(crate) struct Unread {
    data: String,
}

impl Unread {
    /// The event's data, as sent.
    pub(crate) fn data(&self) -> &str {
        &self.data
    }

    /// The event's data, as sent, handed over.
    pub(crate) fn into_data(self) -> String {
        self.data
    }
}

impl PartialEq for KiloEvent {
    /// The same type, id and body (read or not).
    fn eq(&self, other: &Self) -> bool {
        (&self.id, &self.event_type, &self.body) == (&other.id, &other.event_type, &other.body)
    }
}

/// Why an event's data is not a Kilo event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KiloEventError {
    /// The data is not JSON.
    #[error("event data is not JSON: {0}")]
    Json(String),
    /// The JSON is not an object with a string `type`.
    #[error("event has no string `type`")]
    NoType,
}

impl KiloEvent {
    /// Parses one SSE `data` payload. The usual shape (`{type, id?, properties}`, or a
    /// `sync`'s `{type, id?, syncEvent}`, possibly inside the `/global/event` wrapper) is
    /// read without a tree, its body kept as text; anything else is read through the tree,
    /// with the same result.
    pub fn parse(data: &str) -> Result<Self, KiloEventError> {
        if let Some(event) = Self::parse_text(data) {
            return Ok(event);
        }
        let raw: Value =
            serde_json::from_str(data).map_err(|e| KiloEventError::Json(e.to_string()))?;
        // `GET /global/event` wraps each event as `{"directory", "project", "payload"}`.
        let event = match raw.get("type") {
            None => raw.get("payload").filter(|p| p.get("type").is_some()).unwrap_or(&raw),
            Some(_) => &raw,
        };
        let event_type = super::event_type(
            event.get("type").and_then(Value::as_str).ok_or(KiloEventError::NoType)?,
        );
        let id = event.get("id").and_then(Value::as_str).map(EventId::from);
        let key = if event_type == "sync" { "syncEvent" } else { "properties" };
        let body = event.get(key).cloned().unwrap_or(Value::Null).into();
        Ok(Self { id, event_type, body, unread: None })
    }

    /// The event in `data` when it has Kilo's own layout (`{"id","type","properties"}`, the
    /// id optional, bare or in `/global/event`'s wrapper `{"directory","project","payload"}`;
    /// no escapes in the strings; an object body), split at its body without reading it
    /// (its body is read once, later, by the mapping, which validates it: see
    /// [`KiloEvent::is_unread`]); otherwise `data` back (the caller parses it). The body is a
    /// copy of its span, made to size; `data` is kept whole, as the event was sent, for the
    /// read should the body not pass.
    ///
    /// In this layout `data` is JSON exactly when the body is, and then [`KiloEvent::parse`]
    /// gives this event (its read of the body as a span has no depth limit, nor has the
    /// validation of a typed read where it skips a value).
    pub fn split(data: String) -> Result<Self, String> {
        match Layout::of(&data).and_then(Self::cut) {
            Some(event) => Ok(event.unread_from(data)),
            None => Err(data),
        }
    }

    /// The event [`KiloEvent::split`] makes of data laid out as `layout`, before it keeps the
    /// data ([`KiloEvent::unread_from`]); `None` for a `sync` (an echo, read as one). The body
    /// is a copy of its span, made to size.
    pub(super) fn cut(layout: Layout<'_>) -> Option<Self> {
        if layout.event_type == "sync" {
            return None;
        }
        Some(Self {
            id: layout.id.map(EventId::from),
            event_type: super::event_type(layout.event_type),
            body: Payload::from_text_unchecked(layout.body.to_owned()),
            unread: None,
        })
    }

    /// The event [`KiloEvent::cut`] made of `data`, with `data` kept whole, as the event was
    /// sent, for the read should the body not pass.
    pub(super) fn unread_from(self, data: String) -> Self {
        Self { unread: Some(Unread { data }), ..self }
    }

    /// Whether the body is still unread ([`KiloEvent::split`]): until a full read of it has
    /// passed, it may not be JSON.
    pub fn is_unread(&self) -> bool {
        self.unread.is_some()
    }

    /// The session the event belongs to, read from its body as the adapter's mapping reads
    /// it: `syncEvent.aggregateID` of a `sync`, else the first non-empty of
    /// `properties.sessionID`, `properties.info.sessionID` and `properties.part.sessionID`.
    /// An unread body ([`KiloEvent::split`]) that the mapping's read refuses is read as the
    /// mapping then reads it: the event's data whole.
    pub fn session(&self) -> Option<String> {
        let body = self.body.text().unwrap_or_default();
        if let Some(unread) = &self.unread
            && !crate::facts::reads(body)
        {
            return Self::parse(unread.data()).ok()?.session();
        }
        crate::facts::session_of(&self.event_type, &self.body)
    }

    /// The usual shape, read without a tree; `None` for any other (or for text the typed
    /// decode refuses, such as duplicate keys).
    fn parse_text(data: &str) -> Option<Self> {
        let shape = Shape::read(data)?;
        let kind = shape.kind?;
        let body = match (kind.as_ref(), shape.properties, shape.sync) {
            ("sync", None, Some(sync)) => sync,
            (_, Some(properties), None) if kind != "sync" && properties.get().starts_with('{') => {
                properties
            }
            _ => return None,
        };
        Some(Self {
            id: shape.id.map(event_id),
            event_type: super::event_type(&kind),
            body: Payload::from_text(body.to_owned()),
            unread: None,
        })
    }
}

/// A field that, where present, is a string: `null` is refused as any other non-string is
/// (the tree path refuses it), where a plain `Option` would read it as absent.
fn present_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct Text;

    impl<'de> Visitor<'de> for Text {
        type Value = Cow<'de, str>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }

        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Cow::Borrowed(v))
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Cow::Owned(v.to_owned()))
        }
    }

    d.deserialize_str(Text).map(Some)
}

/// The top level of an event, borrowed from its data without building a tree: its type and
/// id, its `properties` as a span of the text, and its `syncEvent` read as `S` (a span, or a
/// `sync`'s head, [`SyncHead`]); a `/global/event` wrapper is read in the same pass. Fails
/// (the caller parses the event whole) on any other shape: a non-string `type` or `id`, a
/// `syncEvent` that is not an `S`, duplicate keys.
#[derive(Deserialize)]
#[serde(bound(deserialize = "S: Deserialize<'de>"))]
struct Envelope<'a, S> {
    #[serde(default, rename = "type", borrow, deserialize_with = "present_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    properties: Option<&'a RawValue>,
    #[serde(default, rename = "syncEvent")]
    sync: Option<S>,
    /// The wrapped event; an event of another shape here is left to the tree.
    #[serde(default, borrow)]
    payload: Option<Box<Envelope<'a, S>>>,
}

/// An event with its body left as text.
type Shape<'a> = Envelope<'a, &'a RawValue>;
/// A `sync` event's head.
type Head<'a> = Envelope<'a, SyncHead<'a>>;

#[derive(Deserialize)]
struct SyncHead<'a> {
    #[serde(default, rename = "aggregateID", borrow)]
    aggregate_id: Option<Cow<'a, str>>,
    #[serde(default)]
    seq: Option<u64>,
}

impl<'a, S> Envelope<'a, S>
where
    Self: Deserialize<'a>,
{
    /// The event in `data`; a `/global/event` wrapper (no `type`; `payload` holds the
    /// event) stands for the event it wraps when it holds one and nothing else the tree
    /// would read, as in [`KiloEvent::parse`].
    fn read(data: &'a str) -> Option<Self> {
        let mut envelope: Self = serde_json::from_str(data).ok()?;
        if envelope.kind.is_none() {
            match (envelope.payload.take(), &envelope.properties, &envelope.sync) {
                (Some(inner), None, None) if inner.kind.is_some() => envelope = *inner,
                _ => return None,
            }
        }
        Some(envelope)
    }
}

/// A `sync` event: Kilo's echo of the event before it under the same id, with the
/// aggregate's (session's) sequence number. Only these fields are read.
#[derive(Debug, Clone, Eq)]
pub struct SyncEcho {
    /// The event's `id`, when it has one.
    pub id: Option<EventId>,
    /// `syncEvent.aggregateID`: the session.
    pub session_id: String,
    /// `syncEvent.seq`, when it is a non-negative integer.
    pub seq: Option<u64>,
    /// Read by comparing its repeat with the body of the event before it while that body
    /// was unread ([`KiloEvent::is_unread`]): the echo is JSON only if that body is.
    pub repeats_unread: bool,
}

impl PartialEq for SyncEcho {
    /// The same id, session and `seq` (however it was read).
    fn eq(&self, other: &Self) -> bool {
        (&self.id, &self.session_id, self.seq) == (&other.id, &other.session_id, other.seq)
    }
}

impl SyncEcho {
    /// Reads a `sync` event without building its JSON tree (its `syncEvent.data` repeats a
    /// whole event: the largest events of the stream). `None` for anything else, and for a
    /// `sync` event of an unusual shape (then parsed whole by [`KiloEvent::parse`]): one with
    /// `properties`, a non-string id, a `seq` that is not a non-negative integer, or no
    /// non-empty `aggregateID`.
    pub fn parse(data: &str) -> Option<Self> {
        // Cheap pre-filter: most events are not `sync`.
        static SYNC_KEY: LazyLock<Finder<'static>> =
            LazyLock::new(|| Finder::new(b"\"syncEvent\""));
        SYNC_KEY.find(data.as_bytes())?;
        let head = Head::read(data)?;
        let sync = head.sync?;
        let session = sync.aggregate_id.filter(|s| !s.is_empty())?;
        if head.kind.as_deref() != Some("sync") || head.properties.is_some() {
            return None;
        }
        Some(Self {
            id: head.id.map(event_id),
            session_id: session.into_owned(),
            seq: sync.seq,
            repeats_unread: false,
        })
    }

    /// A `sync` echo of the event whose body was `last_body`, in the exact layout Kilo
    /// writes (`{"type":"sync","syncEvent":{"id","type","seq","aggregateID","data"},"id"}`,
    /// bare or in `/global/event`'s wrapper `{"directory","project","payload"}`, no escapes
    /// in its strings), read without decoding its `data`: the repeat is compared with
    /// `last_body` byte for byte, which was valid JSON when it was routed. `None` for
    /// anything else ([`SyncEcho::parse`] reads it then); where it reads an echo, it reads
    /// what [`SyncEcho::parse`] would.
    pub fn parse_echo(data: &str, last_body: &str) -> Option<Self> {
        if last_body.is_empty() {
            return None;
        }
        let echo = global_payload(data)?;
        let rest = echo.strip_prefix(r#"{"type":"sync","syncEvent":{"id":"#)?;
        let (_, rest) = plain_string(rest)?;
        let (_, rest) = plain_string(rest.strip_prefix(r#","type":"#)?)?;
        let (seq, rest) = count(rest.strip_prefix(r#","seq":"#)?)?;
        let (session, rest) = plain_string(rest.strip_prefix(r#","aggregateID":"#)?)?;
        let rest = rest.strip_prefix(r#","data":"#)?.strip_prefix(last_body)?;
        let (id, rest) = plain_string(rest.strip_prefix(r#"},"id":"#)?)?;
        (rest == "}" && !session.is_empty()).then(|| Self {
            id: Some(EventId::from(id)),
            session_id: session.to_owned(),
            seq: Some(seq),
            repeats_unread: false,
        })
    }
}

/// An id read by serde: a borrowed one copied (inline when short), an unescaped one keeps its
/// allocation.
fn event_id(id: Cow<'_, str>) -> EventId {
    match id {
        Cow::Borrowed(id) => EventId::from(id),
        Cow::Owned(id) => EventId::from(id),
    }
}

/// An event's data in Kilo's own layout (`{"id","type","properties"}`, the id optional, bare
/// or in `/global/event`'s wrapper `{"directory","project","payload"}`; no escapes in the
/// strings; an object body): its pieces, borrowed. Read once per event by the router, which
/// routes by it and splits the event at it ([`KiloEvent::cut`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout<'a> {
    /// Not in the wrapper: the head is the data's own (`{"id":"…","type":"…"`), and its type
    /// is the first `type` of the data's top level, so the only one a typed read takes (a
    /// second is a duplicate key, which it refuses).
    pub(super) bare: bool,
    id: Option<&'a str>,
    pub(super) event_type: &'a str,
    /// The body's text (`properties`).
    pub(super) body: &'a str,
}

impl<'a> Layout<'a> {
    /// Kilo's layout of `data`, when it has it.
    pub(super) fn of(data: &'a str) -> Option<Self> {
        let event = global_payload(data)?;
        let bare = event.len() == data.len();
        let rest = event.strip_prefix('{')?;
        let (id, rest) = match rest.strip_prefix(r#""id":"#) {
            Some(rest) => {
                let (id, rest) = plain_string(rest)?;
                (Some(id), rest.strip_prefix(',')?)
            }
            None => (None, rest),
        };
        let (event_type, rest) = plain_string(rest.strip_prefix(r#""type":"#)?)?;
        let body = rest.strip_prefix(r#","properties":"#)?.strip_suffix('}')?;
        (body.starts_with('{') && body.ends_with('}')).then_some(Self {
            bare,
            id,
            event_type,
            body,
        })
    }
}

/// A JSON string at the start of `text` that needs no unescaping (no `\`, no control
/// character): its contents and what follows it.
fn plain_string(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('"')?;
    // The first `"`, `\` or control character, sixteen bytes a step: a plain string ends
    // at a `"` before the others.
    let end = bb_payload::string_stop(rest.as_bytes(), 0)?;
    (rest.as_bytes()[end] == b'"').then(|| (&rest[..end], &rest[end + 1..]))
}

/// A non-negative JSON integer at the start of `text` (digits, no leading zero) that fits a
/// `u64`: its value and what follows it (a fraction or exponent there is the caller's to
/// refuse).
fn count(text: &str) -> Option<(u64, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, rest) = text.split_at(digits);
    if digits == 0 || (digits > 1 && number.starts_with('0')) {
        return None;
    }
    Some((number.parse().ok()?, rest))
}

/// An event of no session (`server.connected`, `server.heartbeat`, `plugin.added`, instance
/// and project events), kept as its `data` text: the bridge does not use these, so no tree
/// is built for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnroutedEvent {
    /// The event's `id`, when it has one.
    pub id: Option<EventId>,
    /// The event's `type`: a known one borrowed ([`super::event_type`]).
    pub event_type: Cow<'static, str>,
    /// The SSE `data`, as sent.
    pub data: String,
}

impl UnroutedEvent {
    /// The event's JSON.
    pub fn raw(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }

    /// The event when `data` is a Kilo event (top-level `type`, or wrapped) in which no key
    /// that could name a session appears (`cannot_name_session`), read without building a
    /// tree (its body validated and skipped); otherwise `data` back (the caller parses it
    /// whole).
    pub fn parse(data: String) -> Result<Self, String> {
        let read = cannot_name_session(&data)
            .then(|| Shape::read(&data).and_then(|shape| Some((shape.kind?, shape.id))))
            .flatten();
        let Some((kind, id)) = read else {
            return Err(data);
        };
        let id = id.map(event_id);
        let event_type = super::event_type(&kind);
        Ok(Self { id, event_type, data })
    }
}

/// Whether `data` cannot name a session wherever [`KiloEvent::session`] looks: neither key appears
/// in it, and nothing in it is escaped (a key can be spelled with a `\u` escape).
pub(super) fn cannot_name_session(data: &str) -> bool {
    static CAN_NAME: LazyLock<[Finder<'static>; 3]> = LazyLock::new(|| {
        [Finder::new(b"sessionID"), Finder::new(b"aggregateID"), Finder::new(b"\\u")]
    });
    !CAN_NAME.iter().any(|k| k.find(data.as_bytes()).is_some())
}

/// The event inside `/global/event`'s wrapper `{"directory","project"?,"payload"}` written as
/// Kilo writes it (plain strings), or `data` itself when it is not wrapped; `None` for a
/// wrapper in another layout.
fn global_payload(data: &str) -> Option<&str> {
    let Some(rest) = data.strip_prefix(r#"{"directory":"#) else { return Some(data) };
    let (_, rest) = plain_string(rest)?;
    let rest = match rest.strip_prefix(r#","project":"#) {
        Some(project) => plain_string(project)?.1,
        None => rest,
    };
    rest.strip_prefix(r#","payload":"#)?.strip_suffix('}')
}
