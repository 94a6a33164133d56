//! One Kilo `GET /event` event, kept as sent, with the two facts the router needs: its type
//! and the session it belongs to.

use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

use bb_payload::Payload;
use memchr::memmem::Finder;
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// An event of the Kilo stream: its type, id and session, and its body as sent (ids
/// untouched). The body is what the bridge forwards: `properties`, or `syncEvent` for
/// `sync`; the other top-level fields (and the `/global/event` wrapper) are not kept.
#[derive(Debug, Clone, PartialEq)]
pub struct KiloEvent {
    /// The event's `id` (`evt_…`), when it has one.
    pub id: Option<String>,
    /// The event's `type` (`message.part.delta`, `sync`, …).
    pub event_type: String,
    /// The session: `properties.sessionID`, or `syncEvent.aggregateID` for `sync`.
    pub session_id: Option<String>,
    /// `properties` (`syncEvent` for `sync`), `null` when absent; kept as text when the event
    /// has the usual shape.
    pub body: Payload,
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
        let event_type =
            event.get("type").and_then(Value::as_str).ok_or(KiloEventError::NoType)?.to_owned();
        let id = event.get("id").and_then(Value::as_str).map(str::to_owned);
        let session_id = session_of(event).map(str::to_owned);
        let key = if event_type == "sync" { "syncEvent" } else { "properties" };
        let body = event.get(key).cloned().unwrap_or(Value::Null).into();
        Ok(Self { id, event_type, session_id, body })
    }

    /// The usual shape, read without a tree; `None` for any other (or for text the typed
    /// decode refuses, such as duplicate keys).
    fn parse_text(data: &str) -> Option<Self> {
        let shape = Shape::read(data)?;
        let kind = shape.kind?;
        let (body, session) = match (kind.as_ref(), shape.properties, shape.sync) {
            ("sync", None, Some(sync)) => {
                let head: SyncHead<'_> = serde_json::from_str(sync.get()).ok()?;
                (sync, head.aggregate_id.filter(|s| !s.is_empty()))
            }
            (_, Some(properties), None) if kind != "sync" => {
                let session = match leading_session(properties.get()) {
                    Some(session) => Some(Cow::Borrowed(session)),
                    None => {
                        let head: Properties<'_> = serde_json::from_str(properties.get()).ok()?;
                        head.session()
                    }
                };
                (properties, session)
            }
            _ => return None,
        };
        Some(Self {
            id: shape.id.map(Cow::into_owned),
            event_type: kind.into_owned(),
            session_id: session.map(Cow::into_owned),
            body: Payload::from_text(body.to_owned()),
        })
    }
}

/// The session of `properties` without decoding it, when that is certain: the object
/// starts with a plain (unescaped, non-empty) `sessionID` string, and every `"sessionID"`
/// key in the text names that same session, so whichever the tree would keep (a later
/// duplicate, or `info`'s or `part`'s) is this one. Text with a `\u` escape (a key can be
/// spelled with one) is left to the decode.
fn leading_session(properties: &str) -> Option<&str> {
    static KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"sessionID\""));
    static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    const LEAD: &str = "{\"sessionID\":\"";
    let rest = properties.strip_prefix(LEAD)?;
    let end = memchr::memchr2(b'"', b'\\', rest.as_bytes())?;
    if end == 0 || rest.as_bytes()[end] != b'"' {
        return None;
    }
    let session = &rest[..end];
    let text = properties.as_bytes();
    if ESCAPE.find(text).is_some() {
        return None;
    }
    // Each key is followed by `:"<session>"`, byte for byte.
    let names_it = |at: usize| {
        let after = &text[at + KEY.needle().len()..];
        after
            .strip_prefix(b":\"")
            .and_then(|v| v.strip_prefix(session.as_bytes()))
            .is_some_and(|v| v.first() == Some(&b'"'))
    };
    KEY.find_iter(text).all(names_it).then_some(session)
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

/// The top level of an event, its body left as text.
#[derive(Deserialize)]
struct Shape<'a> {
    #[serde(default, rename = "type", borrow, deserialize_with = "present_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    properties: Option<&'a RawValue>,
    #[serde(default, rename = "syncEvent", borrow)]
    sync: Option<&'a RawValue>,
    /// The wrapped event; an event of another shape here is left to the tree.
    #[serde(default, borrow)]
    payload: Option<Box<Shape<'a>>>,
}

impl<'a> Shape<'a> {
    /// The event in `data`; a `/global/event` wrapper (read in the same pass) stands for
    /// the event it wraps when it holds one and nothing else the tree would read.
    fn read(data: &'a str) -> Option<Self> {
        let mut shape: Self = serde_json::from_str(data).ok()?;
        if shape.kind.is_none() {
            match (shape.payload.take(), &shape.properties, &shape.sync) {
                (Some(inner), None, None) if inner.kind.is_some() => shape = *inner,
                _ => return None,
            }
        }
        Some(shape)
    }
}

/// The session an event belongs to, if any.
pub fn session_of(raw: &Value) -> Option<&str> {
    fn from(v: Option<&Value>) -> Option<&str> {
        v.and_then(Value::as_str).filter(|s| !s.is_empty())
    }
    // Direct lookups: `Value::pointer` allocates while unescaping every token.
    let properties = raw.get("properties");
    let nested =
        |holder: &str| properties.and_then(|p| p.get(holder)).and_then(|h| h.get("sessionID"));
    from(properties.and_then(|p| p.get("sessionID")))
        .or_else(|| from(raw.get("syncEvent").and_then(|s| s.get("aggregateID"))))
        .or_else(|| from(nested("info")))
        .or_else(|| from(nested("part")))
}

/// A `sync` event: Kilo's echo of the event before it under the same id, with the
/// aggregate's (session's) sequence number. Only these fields are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncEcho {
    /// The event's `id`, when it has one.
    pub id: Option<String>,
    /// `syncEvent.aggregateID`: the session.
    pub session_id: String,
    /// `syncEvent.seq`, when it is a non-negative integer.
    pub seq: Option<u64>,
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
        let (kind, head) = Head::parse(data)?;
        let sync = head.sync?;
        let session = sync.aggregate_id.filter(|s| !s.is_empty())?;
        if kind != "sync" || head.properties.is_some() {
            return None;
        }
        Some(Self {
            id: head.id.map(Cow::into_owned),
            session_id: session.into_owned(),
            seq: sync.seq,
        })
    }

    /// A `sync` echo of the event whose body was `last_body`, in the exact layout Kilo
    /// writes (`{"type":"sync","syncEvent":{"id","type","seq","aggregateID","data"},"id"}`,
    /// no escapes in its strings), read without decoding its `data`: the repeat is compared
    /// with `last_body` byte for byte, which was valid JSON when it was routed. `None` for
    /// anything else ([`SyncEcho::parse`] reads it then); where it reads an echo, it reads
    /// what [`SyncEcho::parse`] would.
    pub fn parse_echo(data: &str, last_body: &str) -> Option<Self> {
        if last_body.is_empty() {
            return None;
        }
        let rest = data.strip_prefix(r#"{"type":"sync","syncEvent":{"id":"#)?;
        let (_, rest) = plain_string(rest)?;
        let (_, rest) = plain_string(rest.strip_prefix(r#","type":"#)?)?;
        let (seq, rest) = count(rest.strip_prefix(r#","seq":"#)?)?;
        let (session, rest) = plain_string(rest.strip_prefix(r#","aggregateID":"#)?)?;
        let rest = rest.strip_prefix(r#","data":"#)?.strip_prefix(last_body)?;
        let (id, rest) = plain_string(rest.strip_prefix(r#"},"id":"#)?)?;
        (rest == "}" && !session.is_empty()).then(|| Self {
            id: Some(id.to_owned()),
            session_id: session.to_owned(),
            seq: Some(seq),
        })
    }
}

/// A JSON string at the start of `text` that needs no unescaping (no `\`, no control
/// character): its contents and what follows it.
fn plain_string(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('"')?;
    let end = memchr::memchr2(b'"', b'\\', rest.as_bytes())?;
    let (contents, after) = rest.split_at(end);
    let after = after.strip_prefix('"')?;
    (!contents.bytes().any(|b| b < 0x20)).then_some((contents, after))
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

/// The fields of an event the router reads, borrowed from its data without building a
/// tree. Fails (the caller parses the event whole) on any other shape: a non-string `type`
/// or `id`, a `properties` that is not an object, a `seq` that is not a non-negative integer,
/// duplicate keys. A `/global/event` wrapper is read in the same pass ([`Head::parse`]).
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(default, rename = "type", borrow, deserialize_with = "present_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    properties: Option<Properties<'a>>,
    #[serde(default, rename = "syncEvent", borrow)]
    sync: Option<SyncHead<'a>>,
    /// The wrapped event.
    #[serde(default, borrow)]
    payload: Option<Box<Head<'a>>>,
}

#[derive(Deserialize)]
struct Properties<'a> {
    #[serde(default, rename = "sessionID", borrow)]
    session: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    info: Option<Holder<'a>>,
    #[serde(default, borrow)]
    part: Option<Holder<'a>>,
}

impl<'a> Properties<'a> {
    /// The session [`session_of`] finds in `properties`.
    fn session(self) -> Option<Cow<'a, str>> {
        let named = |s: Option<Cow<'a, str>>| s.filter(|s| !s.is_empty());
        named(self.session)
            .or_else(|| named(self.info.and_then(|h| h.session)))
            .or_else(|| named(self.part.and_then(|h| h.session)))
    }
}

#[derive(Deserialize)]
struct Holder<'a> {
    #[serde(default, rename = "sessionID", borrow)]
    session: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct SyncHead<'a> {
    #[serde(default, rename = "aggregateID", borrow)]
    aggregate_id: Option<Cow<'a, str>>,
    #[serde(default)]
    seq: Option<u64>,
}

impl<'a> Head<'a> {
    /// The event's type and head. A `/global/event` wrapper (no `type`; `payload` holds the
    /// event) stands for the event it wraps when it holds nothing else the event parse would
    /// read, as in [`KiloEvent::parse`]; `None` for any other shape.
    fn parse(data: &'a str) -> Option<(Cow<'a, str>, Self)> {
        let mut head: Head<'a> = serde_json::from_str(data).ok()?;
        if head.kind.is_none() {
            match (head.payload.take(), &head.properties, &head.sync) {
                (Some(inner), None, None) => head = *inner,
                _ => return None,
            }
        }
        Some((head.kind.take()?, head))
    }

    /// Whether it names a session where [`session_of`] looks for one.
    fn names_session(&self) -> bool {
        let named = |s: &Option<Cow<'_, str>>| s.as_deref().is_some_and(|s| !s.is_empty());
        let holder = |h: &Option<Holder<'_>>| h.as_ref().is_some_and(|h| named(&h.session));
        self.properties
            .as_ref()
            .is_some_and(|p| named(&p.session) || holder(&p.info) || holder(&p.part))
            || self.sync.as_ref().is_some_and(|s| named(&s.aggregate_id))
    }
}

/// An event of no session (`server.connected`, `server.heartbeat`, `plugin.added`, instance
/// and project events), kept as its `data` text: the bridge does not use these, so no tree
/// is built for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnroutedEvent {
    /// The event's `id`, when it has one.
    pub id: Option<String>,
    /// The event's `type`.
    pub event_type: String,
    /// The SSE `data`, as sent.
    pub data: String,
}

impl UnroutedEvent {
    /// The event's JSON.
    pub fn raw(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }

    /// The event when `data` is a Kilo event (top-level `type`, or wrapped) that names no
    /// session, read without building a tree; otherwise `data` back (it names a session or has another
    /// shape: the caller parses it whole).
    pub fn parse(data: String) -> Result<Self, String> {
        let read = if cannot_name_session(&data) {
            // No session to read: the body is validated and skipped. This fails where `Head`
            // fails on the type, id, wrapper and duplicate top-level keys; a body `Head`
            // refuses (a `properties` that is not an object or repeats a key, a negative
            // `seq`) is read as the tree reads it: an event of no session.
            Shape::read(&data).and_then(|shape| Some((shape.kind?, shape.id)))
        } else {
            Head::parse(&data).filter(|(_, h)| !h.names_session()).map(|(kind, h)| (kind, h.id))
        };
        let Some((kind, id)) = read else {
            return Err(data);
        };
        let id = id.map(Cow::into_owned);
        let event_type = kind.into_owned();
        Ok(Self { id, event_type, data })
    }
}

/// Whether `data` cannot name a session wherever [`session_of`] looks: neither key appears
/// in it, and nothing in it is escaped (a key can be spelled with a `\u` escape).
pub(super) fn cannot_name_session(data: &str) -> bool {
    static CAN_NAME: LazyLock<[Finder<'static>; 3]> = LazyLock::new(|| {
        [Finder::new(b"sessionID"), Finder::new(b"aggregateID"), Finder::new(b"\\u")]
    });
    !CAN_NAME.iter().any(|k| k.find(data.as_bytes()).is_some())
}
