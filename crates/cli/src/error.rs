//! The error a run ends with and how it is printed (spec §5.4, §9.1): a
//! command failure is `CommandError(<context>\n\nCaused by:\n    <cause>)`,
//! a transport failure `IggyClient(<variant>)`. Exit codes live here too.

use iggy::prelude::IggyError;
use std::fmt::Display;

/// The context line the reference uses for failures of the tool itself.
pub const TOOL_ERROR: &str = "Iggy command line tool error";

#[derive(Debug)]
pub enum CliError {
    /// A command, login, context, credential or file failure (exit 1).
    Command(Failure),
    /// Building or connecting the transport failed (exit 1); the text is the
    /// debug rendering of the SDK's client error.
    Client(String),
    /// A `get` found nothing under `--strict` or JSON output (exit 3).
    NotFound,
}

/// A context line with the chain of causes below it.
#[derive(Debug, Default)]
pub struct Failure {
    pub context: String,
    pub causes: Vec<String>,
    /// The Iggy error code and name of the first cause, when it came from the SDK.
    pub code: Option<u32>,
    pub kind: Option<&'static str>,
}

impl CliError {
    pub fn message(context: impl Into<String>) -> Self {
        CliError::Command(Failure {
            context: context.into(),
            ..Failure::default()
        })
    }

    pub fn caused(context: impl Into<String>, cause: impl Display) -> Self {
        CliError::Command(Failure {
            context: context.into(),
            causes: vec![cause.to_string()],
            ..Failure::default()
        })
    }

    pub fn iggy(context: impl Into<String>, error: &IggyError) -> Self {
        CliError::Command(Failure {
            context: context.into(),
            causes: vec![error.to_string()],
            code: Some(error.as_code()),
            kind: Some(error.as_string()),
        })
    }

    pub fn tool(cause: impl Display) -> Self {
        Self::caused(TOOL_ERROR, cause)
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::NotFound => 3,
            _ => 1,
        }
    }

    /// The text after `Error: ` on stderr.
    pub fn render(&self) -> String {
        match self {
            CliError::Command(failure) => format!("CommandError({})", failure.render()),
            CliError::Client(debug) => format!("IggyClient({debug})"),
            CliError::NotFound => String::new(),
        }
    }

    /// The structured form printed under `--output-format json`.
    pub fn to_json(&self) -> serde_json::Value {
        let (message, causes, code, kind) = match self {
            CliError::Command(f) => (f.context.clone(), f.causes.clone(), f.code, f.kind),
            CliError::Client(debug) => (debug.clone(), Vec::new(), None, Some("IggyClient")),
            CliError::NotFound => ("not found".to_owned(), Vec::new(), None, None),
        };
        serde_json::json!({"error": {"message": message, "causes": causes, "code": code, "kind": kind}})
    }
}

impl Failure {
    fn render(&self) -> String {
        let mut text = self.context.clone();
        match self.causes.as_slice() {
            [] => {}
            [one] => text.push_str(&format!("\n\nCaused by:\n    {one}")),
            many => {
                text.push_str("\n\nCaused by:");
                for (i, cause) in many.iter().enumerate() {
                    text.push_str(&format!("\n    {i}: {cause}"));
                }
            }
        }
        text
    }
}

/// Adds the command's context line to an SDK error.
pub trait Context<T> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T, CliError>;
}

impl<T> Context<T> for Result<T, IggyError> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T, CliError> {
        self.map_err(|e| CliError::iggy(context(), &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_one_cause_when_rendered_should_indent_it_inside_the_parentheses() {
        let error = CliError::caused(
            "Problem creating stream",
            "Stream with name:  already exists.",
        );
        assert_eq!(
            error.render(),
            "CommandError(Problem creating stream\n\nCaused by:\n    Stream with name:  already exists.)"
        );
    }

    #[test]
    fn given_several_causes_when_rendered_should_number_them() {
        let error = CliError::Command(Failure {
            context: "could not read context state".into(),
            causes: vec!["a".into(), "b".into()],
            ..Failure::default()
        });
        assert_eq!(
            error.render(),
            "CommandError(could not read context state\n\nCaused by:\n    0: a\n    1: b)"
        );
    }
}
