//! End-to-end tests of bb-gateway.
