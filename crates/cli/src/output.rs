//! Everything written to stdout goes through `Out` (spec §5.2): the
//! `Executing` line, result lines and tables in text mode (all suppressed by
//! `-q` except the documented exceptions), or one JSON document in the
//! machine-readable modes of §9.1. A closed stdout ends the run quietly.

use crate::args::OutputFormat;
use crate::error::CliError;
use comfy_table::{Cell, CellAlignment, Table, presets};
use serde::Serialize;
use std::borrow::Cow;
use std::io::Write;

/// The target of the CLI's own events.
pub const TARGET: &str = "iggy_cli";

pub struct Out {
    pub quiet: bool,
    pub format: OutputFormat,
    pub strict: bool,
    /// §9.3: while messages are formatted, the `Executing`/`Polled` lines go
    /// to stderr (still suppressed by `-q`).
    pub lines_to_stderr: std::cell::Cell<bool>,
}

impl Out {
    pub fn is_text(&self) -> bool {
        self.format == OutputFormat::Text
    }

    pub fn executing(&self, description: &str) {
        self.line(format!("Executing {description}"));
    }

    /// An ordinary text line: escaped like the reference's log formatter,
    /// suppressed by `-q` and by the JSON modes.
    pub fn line(&self, text: impl AsRef<str>) {
        tracing::info!(target: TARGET, "{}", text.as_ref());
        if !self.is_text() || self.quiet {
            return;
        }
        if self.lines_to_stderr.get() {
            eprintln!("{}", escape_controls(text.as_ref()));
        } else {
            write_stdout(&escape_controls(text.as_ref()));
        }
    }

    /// A text line that is suppressed like `line` but written verbatim.
    pub fn line_raw(&self, text: impl AsRef<str>) {
        if self.is_text() && !self.quiet {
            write_stdout(text.as_ref());
        }
    }

    /// Formatted message output (§9.3): written even with `-q`.
    pub fn bytes(&self, bytes: &[u8]) {
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(bytes)
            .and_then(|()| stdout.flush())
            .is_err()
        {
            std::process::exit(0);
        }
    }

    /// A text line printed even with `-q` (the quiet-mode exceptions of §5.2).
    pub fn always(&self, text: impl AsRef<str>) {
        if self.is_text() {
            write_stdout(text.as_ref());
        }
    }

    pub fn table(&self, table: &Table) {
        self.line(table.to_string());
    }

    /// The command's result in the JSON modes; nothing in text mode.
    pub fn json(&self, value: &impl Serialize) {
        let text = match self.format {
            OutputFormat::Text => return,
            OutputFormat::Json => serde_json::to_string_pretty(value),
            OutputFormat::Ndjson => serde_json::to_string(value),
        };
        write_stdout(&text.unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")));
    }

    /// `{"ok": true, ...}` for commands whose result is only success.
    pub fn ok(&self, fields: serde_json::Value) {
        let mut value = serde_json::json!({"ok": true});
        if let (Some(map), serde_json::Value::Object(extra)) = (value.as_object_mut(), fields) {
            map.extend(extra);
        }
        self.json(&value);
    }

    /// A `get` that found nothing: exit 0 with the line in text mode (exit 3
    /// under `--strict`), `null` and exit 3 in the JSON modes.
    pub fn not_found(&self, text: String) -> Result<(), CliError> {
        if self.is_text() {
            self.line(text);
            return if self.strict {
                Err(CliError::NotFound)
            } else {
                Ok(())
            };
        }
        write_stdout("null");
        Err(CliError::NotFound)
    }
}

/// Writes one line; a reader that went away ends the process with status 0.
pub fn write_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let result = writeln!(stdout, "{text}").and_then(|()| stdout.flush());
    if result.is_err() {
        std::process::exit(0);
    }
}

/// Escapes BEL, BS, FF, ESC, DEL and the C1 controls the way the reference's
/// log formatter does; every other character passes unchanged.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    let needs = |c: char| {
        matches!(
            c,
            '\x07' | '\x08' | '\x0c' | '\x1b' | '\x7f' | '\u{80}'..='\u{9f}'
        )
    };
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\x07' | '\x08' | '\x0c' | '\x1b' | '\x7f' => {
                escaped.push_str(&format!("\\x{:02x}", c as u32));
            }
            '\u{80}'..='\u{9f}' => escaped.push_str(&format!("\\u{{{:x}}}", c as u32)),
            other => escaped.push(other),
        }
    }
    Cow::Owned(escaped)
}

/// A bordered table with the given header.
pub fn table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table.set_header(header.iter().map(Cell::new).collect::<Vec<_>>());
    table
}

/// A `Property | Value` table from label/value pairs.
pub fn property_table(rows: Vec<(&str, String)>) -> Table {
    let mut t = table(&["Property", "Value"]);
    for (label, value) in rows {
        t.add_row(vec![label.to_owned(), value]);
    }
    t
}

/// The borderless style of tables nested inside a cell.
pub fn nested_table(header: &[&str]) -> Table {
    let mut t = table(header);
    t.load_style(presets::ASCII_NO_BORDERS);
    t
}

pub fn centered(text: String) -> Cell {
    Cell::new(text).set_alignment(CellAlignment::Center)
}

/// A diagnostic line on stderr in the reference's log-formatter shape.
pub fn warn(message: &str) {
    tracing::warn!(target: TARGET, "{message}");
    if std::env::var("NO_COLOR").is_ok_and(|v| !v.is_empty()) {
        eprintln!(" WARN {message}");
    } else {
        eprintln!("\x1b[33m WARN\x1b[0m {message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_control_characters_when_escaped_should_match_formatter() {
        assert_eq!(escape_controls("s\x1bt"), "s\\x1bt");
        assert_eq!(escape_controls("a\u{85}b\tc"), "a\\u{85}b\tc");
        assert_eq!(escape_controls("plain"), "plain");
    }

    #[test]
    fn given_property_rows_when_rendered_should_match_reference_layout() {
        let t = property_table(vec![
            ("Stream ID", "0".into()),
            ("Stream name", "orders".into()),
        ]);
        let expected = "\
+-------------+--------+
| Property    | Value  |
+======================+
| Stream ID   | 0      |
|-------------+--------|
| Stream name | orders |
+-------------+--------+";
        assert_eq!(t.to_string(), expected);
    }
}
