//! Unit tests of the pure core.
