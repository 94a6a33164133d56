//! The update list of one `bb/events` message: each [`WebviewUpdate`]'s JSON text, written
//! once by the host core and shared by every tab, ring and line that carries it.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::updates::WebviewUpdate;

/// The updates of one `bb/events` message, in order, as JSON texts. Cheap to clone.
#[derive(Clone, Default)]
pub struct Updates(Arc<[Box<RawValue>]>);

impl Updates {
    /// Updates already written (each one a JSON object serde_json produced).
    pub fn from_written(json: Vec<Box<RawValue>>) -> Self {
        Updates(json.into())
    }

    /// Writes each update.
    pub fn from_items(items: &[WebviewUpdate<'_>]) -> Self {
        let json: Vec<Box<RawValue>> =
            items.iter().filter_map(|u| serde_json::value::to_raw_value(u).ok()).collect();
        Updates(json.into())
    }

    /// Number of updates.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The updates' JSON texts.
    pub fn written(&self) -> &[Box<RawValue>] {
        &self.0
    }

    /// Bytes of the JSON array: the updates, the commas between them and the brackets.
    pub fn written_len(&self) -> usize {
        let items: usize = self.0.iter().map(|j| j.get().len()).sum();
        items + self.0.len().saturating_sub(1) + 2
    }

    /// The updates decoded (for readers off the delivery path: tests and tools); an update
    /// of a kind this build does not know is skipped.
    pub fn items(&self) -> Vec<WebviewUpdate<'static>> {
        self.0.iter().filter_map(|j| serde_json::from_str(j.get()).ok()).collect()
    }
}

impl PartialEq for Updates {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().zip(other.0.iter()).all(|(a, b)| a.get() == b.get())
    }
}

impl fmt::Debug for Updates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter().map(|j| j.get())).finish()
    }
}

impl Serialize for Updates {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Updates {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Each update must be one this build knows; it is kept as the text it was.
        let items = Vec::<WebviewUpdate<'static>>::deserialize(deserializer)?;
        Ok(Updates::from_items(&items))
    }
}
