//! Capabilities both ways: what this client offers at `initialize`, which optional agent
//! methods the agent's answer offers (each used only then, `not_supported` otherwise), what
//! a prompt may contain, and whether a config option takes a value.

use agent_client_protocol::v1::schema::{
    BooleanConfigOptionCapabilities, ClientCapabilities, ClientSessionCapabilities,
    CompactionCapabilities, ElicitationCapabilities, ElicitationFormCapabilities,
    ElicitationUrlCapabilities, FileSystemCapabilities, InitializeResponse, NoticeCapabilities,
    SessionConfigOptionsCapabilities,
};
use bb_protocol::ws::ContentBlock;
use serde_json::Value;

use crate::AcpError;

/// What the bridge offers an agent: file reads and writes (inside the workspace; writes
/// behind trust and the user's approval), terminals (behind trust), notices and compaction
/// updates, boolean config options, form and URL elicitations.
pub(crate) fn client_capabilities() -> ClientCapabilities {
    ClientCapabilities::new()
        .fs(FileSystemCapabilities::new().read_text_file(true).write_text_file(true))
        .terminal(true)
        .session(
            ClientSessionCapabilities::new()
                .notices(NoticeCapabilities::new())
                .compaction(CompactionCapabilities::new())
                .config_options(
                    SessionConfigOptionsCapabilities::new()
                        .boolean(BooleanConfigOptionCapabilities::new()),
                ),
        )
        .elicitation(
            ElicitationCapabilities::new()
                .form(ElicitationFormCapabilities::new())
                .url(ElicitationUrlCapabilities::new()),
        )
}

/// An agent method the protocol makes optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optional {
    /// `session/load` (`agentCapabilities.loadSession`).
    Load,
    /// `session/list` (`sessionCapabilities.list`).
    List,
    /// `session/resume` (`sessionCapabilities.resume`).
    Resume,
    /// `session/close` (`sessionCapabilities.close`).
    Close,
    /// `session/delete` (`sessionCapabilities.delete`).
    Delete,
}

impl Optional {
    /// The ACP method.
    pub fn method(self) -> &'static str {
        match self {
            Optional::Load => "session/load",
            Optional::List => "session/list",
            Optional::Resume => "session/resume",
            Optional::Close => "session/close",
            Optional::Delete => "session/delete",
        }
    }

    /// Whether the agent's `initialize` answer offers it.
    pub(crate) fn offered(self, init: &InitializeResponse) -> bool {
        let caps = &init.agent_capabilities;
        let s = &caps.session_capabilities;
        match self {
            Optional::Load => caps.load_session,
            Optional::List => s.list.is_some(),
            Optional::Resume => s.resume.is_some(),
            Optional::Close => s.close.is_some(),
            Optional::Delete => s.delete.is_some(),
        }
    }
}

/// Refuses prompt content the agent's `promptCapabilities` do not offer (text and resource
/// links are always allowed).
pub(crate) fn check_prompt(
    init: &InitializeResponse,
    prompt: &[ContentBlock],
) -> Result<(), AcpError> {
    let caps = &init.agent_capabilities.prompt_capabilities;
    for block in prompt {
        match block {
            ContentBlock::Image { .. } if !caps.image => {
                return Err(AcpError::NotSupported("image prompts (promptCapabilities.image)"));
            }
            ContentBlock::Audio { .. } if !caps.audio => {
                return Err(AcpError::NotSupported("audio prompts (promptCapabilities.audio)"));
            }
            ContentBlock::Resource { .. } if !caps.embedded_context => {
                return Err(AcpError::NotSupported(
                    "embedded resources in prompts (promptCapabilities.embeddedContext)",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The values a select option offers (flat or grouped).
pub(crate) fn select_values(option: &Value) -> Vec<&str> {
    let mut values = Vec::new();
    for o in option.get("options").and_then(Value::as_array).into_iter().flatten() {
        match o.get("options").and_then(Value::as_array) {
            Some(group) => {
                values.extend(group.iter().filter_map(|g| g.get("value").and_then(Value::as_str)));
            }
            None => values.extend(o.get("value").and_then(Value::as_str)),
        }
    }
    values
}

/// Checks that `config_id` names one of `options` and `value` is one it takes.
pub(crate) fn check_option_value(
    options: &[Value],
    config_id: &str,
    value: &Value,
) -> Result<(), AcpError> {
    let ids: Vec<&str> =
        options.iter().filter_map(|o| o.get("id").and_then(Value::as_str)).collect();
    let Some(option) =
        options.iter().find(|o| o.get("id").and_then(Value::as_str) == Some(config_id))
    else {
        return Err(AcpError::InvalidParams(format!(
            "the session has no config option {config_id:?}; it has {ids:?}"
        )));
    };
    match (option.get("type").and_then(Value::as_str), value) {
        (Some("boolean"), Value::Bool(_)) => Ok(()),
        (Some("boolean"), _) => {
            Err(AcpError::InvalidParams(format!("config option {config_id:?} takes true or false")))
        }
        (_, Value::String(v)) => {
            let values = select_values(option);
            if values.contains(&v.as_str()) {
                Ok(())
            } else {
                Err(AcpError::InvalidParams(format!(
                    "{v:?} is not a value of config option {config_id:?}; it takes {values:?}"
                )))
            }
        }
        _ => Err(AcpError::InvalidParams(format!(
            "config option {config_id:?} takes one of its values as a string"
        ))),
    }
}
