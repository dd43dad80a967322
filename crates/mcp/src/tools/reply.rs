//! How a tool's outcome becomes an MCP result: a success is the JSON of
//! the value as one text block; a failure is a tool error (`isError: true`)
//! whose text is the server's own message, so the agent can read and act on
//! it. Protocol errors (JSON-RPC `error`) are left to malformed requests.

use iggy::prelude::{Identifier, IggyError};
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::Value;

/// A failure to show the agent, already worded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl From<IggyError> for ToolError {
    fn from(error: IggyError) -> Self {
        ToolError(server_message(&error))
    }
}

/// The server's message with its stable code and name, e.g.
/// `Stream with name: orders already exists. (iggy error 1012: stream_name_already_exists)`.
pub fn server_message(error: &IggyError) -> String {
    format!(
        "{error} (iggy error {}: {})",
        error.as_code(),
        error.as_string()
    )
}

pub type Outcome = Result<Value, ToolError>;

/// Serializes a value for the agent.
pub fn json(value: impl Serialize) -> Outcome {
    serde_json::to_value(value).map_err(|error| ToolError(format!("cannot encode result: {error}")))
}

/// The reply to a command that returns nothing: `{"ok": true}`.
pub fn done() -> Outcome {
    Ok(serde_json::json!({ "ok": true }))
}

/// A lookup that found nothing is a tool error naming what was missing.
pub fn found<T: Serialize>(value: Option<T>, what: &str, key: &str) -> Outcome {
    match value {
        Some(value) => json(value),
        None => Err(ToolError(format!("{what} {key:?} was not found"))),
    }
}

/// A stream, topic, group or user: a number means that id, anything else is
/// a name (the SDK's rule, so agents may use either).
pub fn identifier(value: &str) -> Result<Identifier, ToolError> {
    Identifier::from_str_value(value)
        .map_err(|error| ToolError(format!("invalid identifier {value:?}: {error}")))
}

/// Parses an optional textual argument with the SDK's own `FromStr`.
pub fn parse_optional<T>(value: Option<&str>, argument: &str) -> Result<Option<T>, ToolError>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    value
        .map(|text| {
            text.parse::<T>()
                .map_err(|error| ToolError(format!("invalid {argument} {text:?}: {error}")))
        })
        .transpose()
}

pub fn into_result(outcome: Outcome) -> CallToolResult {
    match outcome {
        Ok(value) => {
            let text = serde_json::to_string_pretty(&value)
                .expect("a serde_json::Value always serializes");
            CallToolResult::success(vec![ContentBlock::text(text)])
        }
        Err(ToolError(message)) => CallToolResult::error(vec![ContentBlock::text(message)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_server_error_when_replying_should_be_a_tool_error_with_its_message() {
        let error = IggyError::StreamIdNotFound(Identifier::numeric(7).expect("7 is a valid id"));
        let result = into_result(Err(error.into()));
        assert_eq!(result.is_error, Some(true));
        let text = serde_json::to_string(&result.content).expect("content serializes");
        assert!(text.contains("iggy error"), "{text}");
    }

    #[test]
    fn given_a_value_when_replying_should_be_json_text() {
        let result = into_result(json(vec![1, 2]));
        assert_eq!(result.is_error, Some(false));
        let text = serde_json::to_string(&result.content).expect("content serializes");
        assert!(text.contains("1"), "{text}");
    }

    #[test]
    fn given_a_number_or_a_name_when_parsing_an_identifier_should_accept_both() {
        assert!(identifier("12").is_ok());
        assert!(identifier("orders").is_ok());
        assert!(identifier("").is_err());
    }
}
