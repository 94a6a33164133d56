//! [`EngineEvents`]: the engine events of one [`crate::Input::Events`], on the heap, so that
//! an input stays small: it moves several times between an engine's stream and the host
//! (through the pumps' futures, the channel and the service loop), and a move of a large
//! value is a `memcpy` call each time where a small one is a few register moves.

use std::ops::Deref;

use bb_normalize::EventClass;
use bb_protocol::v1::EngineEvent;

/// An engine event and the class its adapter read.
pub type ClassedEvent = (EngineEvent, EventClass);

/// Engine events of one session, in engine order, each with its class. Reads as a slice.
///
/// Why a `Vec` and not one event inline: an event is 200 bytes, which made every
/// [`crate::Input`] 280 bytes, and an input is moved about fifteen times on its way to the
/// host; one allocation per input costs less than those copies (BENCHMARKS.md, issue 29's
/// nineteenth round).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineEvents(Vec<ClassedEvent>);

impl EngineEvents {
    /// One event.
    pub fn one(event: ClassedEvent) -> Self {
        EngineEvents(vec![event])
    }

    /// Appends `more` after these events.
    pub fn extend(&mut self, more: EngineEvents) {
        self.0.extend(more.0);
    }
}

impl Deref for EngineEvents {
    type Target = [ClassedEvent];

    fn deref(&self) -> &[ClassedEvent] {
        &self.0
    }
}

impl From<Vec<ClassedEvent>> for EngineEvents {
    fn from(list: Vec<ClassedEvent>) -> Self {
        EngineEvents(list)
    }
}

impl From<ClassedEvent> for EngineEvents {
    fn from(event: ClassedEvent) -> Self {
        EngineEvents::one(event)
    }
}

impl FromIterator<ClassedEvent> for EngineEvents {
    fn from_iter<I: IntoIterator<Item = ClassedEvent>>(events: I) -> Self {
        EngineEvents(events.into_iter().collect())
    }
}

impl IntoIterator for EngineEvents {
    type Item = ClassedEvent;
    type IntoIter = std::vec::IntoIter<ClassedEvent>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a EngineEvents {
    type Item = &'a ClassedEvent;
    type IntoIter = std::slice::Iter<'a, ClassedEvent>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
