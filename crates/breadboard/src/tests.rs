//! Unit tests of the BreadBoard engine: the client's resume cursor and stream against the fake
//! transport, the adapter's mapping of stream updates, its stream positions, and its wire
//! contract against `wiremock`.

mod client;
mod cursors;
mod mapping;
mod wire;
