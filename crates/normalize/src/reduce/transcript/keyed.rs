//! An index from a key (a message id, with its turn) to the block that carries it, holding no
//! copy of the key: it maps the key's hash to block positions and asks the caller whether the
//! block at a position carries the key, so the id is kept once, in its block. Hashes and
//! positions are kept in 32 bits (8 bytes an entry): keys that share one are told apart by
//! the caller, as any collision is.

use std::collections::hash_map::Entry;
use std::hash::{BuildHasher, Hash};

use foldhash::HashMap;
use foldhash::fast::RandomState;

/// Block positions by key hash.
#[derive(Debug, Clone, Default)]
pub(super) struct KeyIndex {
    hasher: RandomState,
    /// The first block indexed under each hash.
    first: HashMap<u32, u32>,
    /// Further blocks whose keys share a hash with an earlier one (rare).
    more: HashMap<u32, Vec<usize>>,
}

impl KeyIndex {
    /// The block that carries `key`: the first one indexed under its hash for which
    /// `carries(position)` holds.
    pub(super) fn get(&self, key: impl Hash, carries: impl Fn(usize) -> bool) -> Option<usize> {
        let hash = self.hash(key);
        if let Some(&first) = self.first.get(&hash)
            && carries(first as usize)
        {
            return Some(first as usize);
        }
        self.more.get(&hash)?.iter().copied().find(|&i| carries(i))
    }

    /// The key's hash, cut to 32 bits.
    fn hash(&self, key: impl Hash) -> u32 {
        self.hasher.hash_one(key) as u32
    }

    /// Indexes block `i` under `key` (a key [`get`](Self::get) did not find).
    pub(super) fn insert(&mut self, key: impl Hash, i: usize) {
        let hash = self.hash(key);
        match (self.first.entry(hash), u32::try_from(i)) {
            (Entry::Vacant(e), Ok(i)) => {
                e.insert(i);
            }
            // Taken, or a position past 32 bits (never: 4 billion blocks).
            _ => self.more.entry(hash).or_default().push(i),
        }
    }

    /// The indexed positions, sorted.
    fn positions(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self
            .first
            .values()
            .map(|&i| i as usize)
            .chain(self.more.values().flatten().copied())
            .collect();
        all.sort_unstable();
        all
    }
}

/// Two indexes are equal when they index the same blocks (each hashes with its own seed, and
/// the keys live in the blocks).
impl PartialEq for KeyIndex {
    fn eq(&self, other: &Self) -> bool {
        self.positions() == other.positions()
    }
}

#[cfg(test)]
mod tests {
    use super::KeyIndex;

    #[test]
    fn finds_a_block_only_where_the_block_carries_the_key() {
        let keys = ["msg_a", "msg_b", "msg_c"];
        let mut index = KeyIndex::default();
        for (i, k) in keys.iter().enumerate() {
            index.insert(*k, i);
        }
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(index.get(*k, |at| keys.get(at) == Some(k)), Some(i));
        }
        assert_eq!(index.get("msg_d", |_| true), None);
        // A block that no longer carries its key (the caller says so) is not returned.
        assert_eq!(index.get("msg_a", |_| false), None);
    }

    #[test]
    fn blocks_whose_keys_share_a_hash_are_all_reachable() {
        // The same key indexed twice stands for two keys with one hash.
        let mut index = KeyIndex::default();
        index.insert(("msg", Some(1_i64)), 0);
        index.insert(("msg", Some(1_i64)), 4);
        index.insert(("msg", Some(1_i64)), 9);
        assert_eq!(index.get(("msg", Some(1_i64)), |i| i == 0), Some(0));
        assert_eq!(index.get(("msg", Some(1_i64)), |i| i == 9), Some(9));
        assert_eq!(index.get(("msg", Some(1_i64)), |i| i == 5), None);
        assert_eq!(index.get(("msg", Some(2_i64)), |_| true), None);
    }

    #[test]
    fn indexes_of_the_same_blocks_are_equal_whatever_their_seeds() {
        let (mut a, mut b) = (KeyIndex::default(), KeyIndex::default());
        for (i, k) in ["x", "y", "z"].iter().enumerate() {
            a.insert(*k, i);
            b.insert(*k, i);
        }
        assert_eq!(a, b);
        b.insert("w", 3);
        assert_ne!(a, b);
    }
}
