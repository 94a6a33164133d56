//! The real Kilo engine (placeholder).
