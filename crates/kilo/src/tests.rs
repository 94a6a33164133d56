//! Unit tests of the Kilo engine: the event parse and the router against the fake transport
//! (routing, `sync` echoes, events of no session), the flat body read against serde's, the
//! event mapping on every capture, the adapter's faults and files against `wiremock`, the
//! permission deadline, the pump's hand-over to a full channel, the supervisor's pure parts,
//! and restarts through the service loop in simulated time.

mod credentials;
mod endpoint;
mod event;
mod events;
mod events_thread;
mod faults;
mod files;
mod flat;
mod memo;
mod pump;
mod restart;
mod router;
mod supervisor;
mod sync;
mod unread;
mod unrouted;
