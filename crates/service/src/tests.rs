//! Unit tests of the service's pure parts.

mod breadboard;
