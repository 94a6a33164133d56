//! [`EngineEvents`]: the engine events of one [`crate::Input::Events`], one held inline (an
//! engine's stream hands them over one at a time, so nearly every input holds one) and a
//! list only once inputs merge.

use std::ops::Deref;

use bb_normalize::EventClass;
use bb_protocol::v1::EngineEvent;
use smallvec::SmallVec;

/// An engine event and the class its adapter read.
pub type ClassedEvent = (EngineEvent, EventClass);

/// Engine events of one session, in engine order, each with its class. Reads as a slice;
/// one event costs no list.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineEvents(SmallVec<[ClassedEvent; 1]>);

impl EngineEvents {
    /// One event.
    pub fn one(event: ClassedEvent) -> Self {
        EngineEvents(SmallVec::from_buf([event]))
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
        EngineEvents(SmallVec::from_vec(list))
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
    type IntoIter = smallvec::IntoIter<[ClassedEvent; 1]>;

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
