//! The WebSocket transport envelope shared by the Tauri and VS Code webviews.

mod decode;
mod envelope;
mod events;
mod params;
mod results;

pub use decode::decode_ws;
pub use envelope::{
    WsAnyMethod, WsCall, WsError, WsEvent, WsMessage, WsMethod, WsRequest, WsRequestCall,
    WsResponse,
};
pub use events::*;
pub use params::*;
pub use results::*;
