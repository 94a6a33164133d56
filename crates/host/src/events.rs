//! [`EngineEvents`]: the engine events of one [`crate::Input::Events`], one held inline (an
//! engine's stream hands them over one at a time, so nearly every input holds one) and a
//! list only once inputs merge.

use std::ops::Deref;

use bb_normalize::EventClass;
use bb_protocol::v1::EngineEvent;

/// An engine event and the class its adapter read.
pub type ClassedEvent = (EngineEvent, EventClass);

/// Engine events of one session, in engine order, each with its class. Reads as a slice;
/// one event costs no list.
#[derive(Debug, Clone)]
pub struct EngineEvents(Inner);

#[derive(Debug, Clone)]
enum Inner {
    One(ClassedEvent),
    Many(Vec<ClassedEvent>),
}

impl EngineEvents {
    /// One event.
    pub fn one(event: ClassedEvent) -> Self {
        EngineEvents(Inner::One(event))
    }

    /// Appends `more` after these events.
    pub fn extend(&mut self, more: EngineEvents) {
        let mut list = match std::mem::replace(&mut self.0, Inner::Many(Vec::new())) {
            Inner::One(first) => {
                let mut list = Vec::with_capacity(1 + more.len());
                list.push(first);
                list
            }
            Inner::Many(list) => list,
        };
        list.extend(more);
        self.0 = Inner::Many(list);
    }
}

impl Deref for EngineEvents {
    type Target = [ClassedEvent];

    fn deref(&self) -> &[ClassedEvent] {
        match &self.0 {
            Inner::One(event) => std::slice::from_ref(event),
            Inner::Many(list) => list,
        }
    }
}

/// Equal when they hold the same events, one inline or in a list.
impl PartialEq for EngineEvents {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl From<Vec<ClassedEvent>> for EngineEvents {
    fn from(list: Vec<ClassedEvent>) -> Self {
        EngineEvents(Inner::Many(list))
    }
}

impl From<ClassedEvent> for EngineEvents {
    fn from(event: ClassedEvent) -> Self {
        EngineEvents::one(event)
    }
}

impl FromIterator<ClassedEvent> for EngineEvents {
    fn from_iter<I: IntoIterator<Item = ClassedEvent>>(events: I) -> Self {
        EngineEvents(Inner::Many(events.into_iter().collect()))
    }
}

impl IntoIterator for EngineEvents {
    type Item = ClassedEvent;
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        IntoIter(match self.0 {
            Inner::One(event) => Iter::One(Some(event)),
            Inner::Many(list) => Iter::Many(list.into_iter()),
        })
    }
}

impl<'a> IntoIterator for &'a EngineEvents {
    type Item = &'a ClassedEvent;
    type IntoIter = std::slice::Iter<'a, ClassedEvent>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The events of an [`EngineEvents`], in order.
#[derive(Debug)]
pub struct IntoIter(Iter);

#[derive(Debug)]
enum Iter {
    One(Option<ClassedEvent>),
    Many(std::vec::IntoIter<ClassedEvent>),
}

impl Iterator for IntoIter {
    type Item = ClassedEvent;

    fn next(&mut self) -> Option<ClassedEvent> {
        match &mut self.0 {
            Iter::One(event) => event.take(),
            Iter::Many(list) => list.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Iter::One(event) => (usize::from(event.is_some()), Some(usize::from(event.is_some()))),
            Iter::Many(list) => list.size_hint(),
        }
    }
}

impl ExactSizeIterator for IntoIter {}
