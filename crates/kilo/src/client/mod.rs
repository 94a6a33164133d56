//! The Kilo CLI server: its REST client, wire types, and the event router of its one
//! `GET /event` stream per workspace.

mod event;
mod rest;
mod router;
mod routes;
mod types;

pub use event::{KiloEvent, KiloEventError, SyncEcho, UnroutedEvent};
pub use rest::{KiloClient, KiloError};
pub(crate) use router::{Consumer, Gone, spawn_router_into};
pub use router::{
    KiloRouterHandle, KiloUpdate, RouterOptions, Routing, route, spawn_router, spawn_router_with,
};
pub use routes::{FileDiff, QuestionRequest};
pub use types::{
    CreateSession, Health, MessageInfo, MessageWithParts, ModelRef, PermissionReply,
    PermissionRequest, PromptPart, PromptRequest, Session, SessionStatus, SessionTime, StatusMap,
};
