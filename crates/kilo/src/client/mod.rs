//! The Kilo CLI server: its REST client, wire types, and the event router of its one
//! `GET /event` stream per workspace.

mod event;
mod kind;
mod rest;
mod router;
mod routes;
mod types;

pub use event::{KiloEvent, KiloEventError, SyncEcho, UnroutedEvent};
pub use kind::event_type;
pub use rest::{KiloClient, KiloError};
pub use router::{
    Consumer, Gone, KiloRouterHandle, KiloUpdate, READY_BATCH, RouterOptions, Routing, route,
    spawn_router_into,
};
pub use routes::{FileDiff, QuestionRequest};
pub use types::{
    CreateSession, Health, MessageInfo, MessageWithParts, ModelRef, PermissionReply,
    PermissionRequest, PromptPart, PromptRequest, Session, SessionStatus, SessionTime, StatusMap,
};
