//! `context` commands (spec §6.13): no network, no credentials.

use super::streams::print_rows;
use crate::args::ListMode;
use crate::args::system::{ContextAction, ContextCreateArgs};
use crate::context::{ContextState, ContextTable, DEFAULT_CONTEXT, KNOWN_KEYS, missing_key};
use crate::error::CliError;
use crate::output::{Out, property_table};

const VALID_TRANSPORTS: [&str; 4] = ["tcp", "quic", "http", "ws"];
const MASK: &str = "********";

pub fn run(action: ContextAction, state: &ContextState, out: &Out) -> Result<(), CliError> {
    match action {
        ContextAction::List(mode) => list(mode.list_mode, state, out),
        ContextAction::Use { context_name: name } => {
            out.executing(&format!("use context {name}"));
            if let Some(cause) = state.broken.get(&name) {
                return Err(broken(&name, cause));
            }
            if !state.contexts.contains_key(&name) {
                return Err(missing_key(&name));
            }
            state.write_active(&name)?;
            out.line(format!("active context set to '{name}'"));
            out.ok(serde_json::json!({"active": name}));
            Ok(())
        }
        ContextAction::Create(args) => create(args, state, out),
        ContextAction::Delete { context_name: name } => delete(name, state, out),
        ContextAction::Show { context_name: name } => show(&name, state, out),
    }
}

fn broken(name: &str, cause: &str) -> CliError {
    CliError::caused(
        format!(
            "context '{name}' in contexts.toml cannot be read; `iggy context delete {name}` removes it"
        ),
        cause,
    )
}

fn display_name(name: &str, state: &ContextState) -> String {
    if name == state.active {
        format!("{name}*")
    } else {
        name.to_owned()
    }
}

fn list(mode: ListMode, state: &ContextState, out: &Out) -> Result<(), CliError> {
    out.executing(&format!("list contexts in {mode} mode"));
    let mut all: Vec<&String> = state.contexts.keys().chain(state.broken.keys()).collect();
    all.sort();
    let names: Vec<String> = all.into_iter().map(|n| display_name(n, state)).collect();
    out.json(&names);
    match mode {
        ListMode::Table => print_rows(out, mode, &["Name"], names.into_iter().map(|n| vec![n])),
        ListMode::List => {
            // The reference prints each name as a styled log field (§6.13, §8 #19).
            let plain = std::env::var("NO_COLOR").is_ok_and(|v| !v.is_empty());
            for name in names {
                let field = if plain {
                    "printed_name=".to_owned()
                } else {
                    "\x1b[3mprinted_name\x1b[0m\x1b[2m=\x1b[0m".to_owned()
                };
                out.line_raw(format!("{field}{name:?}"));
            }
        }
    }
    Ok(())
}

fn validate_name(name: &str, state: &ContextState) -> Result<(), CliError> {
    if name.trim().is_empty() {
        return Err(CliError::message(
            "context name cannot be empty or whitespace-only",
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    {
        return Err(CliError::message(
            "context name must contain only alphanumeric characters, hyphens, and underscores",
        ));
    }
    if name == DEFAULT_CONTEXT {
        return Err(CliError::message(format!(
            "cannot create a context named '{DEFAULT_CONTEXT}' - it is reserved"
        )));
    }
    if state.contexts.contains_key(name) || state.broken.contains_key(name) {
        return Err(CliError::message(format!(
            "context '{name}' already exists in contexts.toml"
        )));
    }
    Ok(())
}

fn create(a: ContextCreateArgs, state: &ContextState, out: &Out) -> Result<(), CliError> {
    let name = a.context_name.clone();
    out.executing(&format!("create context {name}"));
    validate_name(&name, state)?;
    if let Some(t) = &a.transport
        && !VALID_TRANSPORTS.contains(&t.as_str())
    {
        return Err(CliError::message(format!(
            "invalid transport '{t}' - valid values are: tcp, quic, http, ws"
        )));
    }
    let mut table = ContextTable::new();
    let texts = [
        ("username", a.username),
        ("password", a.password),
        ("token", a.token),
        ("token_name", a.token_name),
        ("transport", a.transport),
        ("http_api_url", a.http_api_url),
        ("tcp_server_address", a.tcp_server_address),
        ("quic_server_address", a.quic_server_address),
    ];
    for (key, value) in texts {
        if let Some(v) = value {
            table.insert(key.to_owned(), v.into());
        }
    }
    if let Some(tls) = a.tcp_tls_enabled {
        table.insert("tcp_tls_enabled".to_owned(), tls.into());
    }
    let mut contexts = state.contexts.clone();
    contexts.insert(name.clone(), table);
    state.with_contexts(contexts).write_contexts()?;
    out.line(format!("context '{name}' created successfully"));
    out.ok(serde_json::json!({"name": name}));
    Ok(())
}

fn delete(name: String, state: &ContextState, out: &Out) -> Result<(), CliError> {
    out.executing(&format!("delete context {name}"));
    if name == DEFAULT_CONTEXT {
        return Err(CliError::message("cannot delete the 'default' context"));
    }
    if !state.contexts.contains_key(&name) && !state.broken.contains_key(&name) {
        return Err(CliError::message(format!(
            "context '{name}' not found in contexts.toml"
        )));
    }
    let mut contexts = state.contexts.clone();
    contexts.remove(&name);
    let updated = state.with_contexts(contexts);
    updated.write_contexts()?;
    if state.active == name {
        updated.write_active(DEFAULT_CONTEXT)?;
    }
    out.line(format!("context '{name}' deleted successfully"));
    out.ok(serde_json::json!({"name": name}));
    Ok(())
}

fn show(name: &str, state: &ContextState, out: &Out) -> Result<(), CliError> {
    out.executing(&format!("show context {name}"));
    let Some(table) = state.contexts.get(name) else {
        if let Some(cause) = state.broken.get(name) {
            return Err(broken(name, cause));
        }
        return Err(CliError::message(format!("context '{name}' not found")));
    };
    let mut rows = vec![("Name".to_owned(), display_name(name, state))];
    // `context show` lists connection keys first and the credentials last.
    let order = KNOWN_KEYS.iter().skip(4).chain(KNOWN_KEYS.iter().take(4));
    for (key, label, _, masked) in order {
        if let Some(value) = table.get(*key) {
            let text = if *masked {
                MASK.to_owned()
            } else {
                plain_value(value)
            };
            rows.push(((*label).to_owned(), text));
        }
    }
    let known = |k: &str| KNOWN_KEYS.iter().any(|(key, ..)| *key == k);
    for (key, value) in table.iter().filter(|(k, _)| !known(k)) {
        rows.push((key.clone(), value.to_string()));
    }
    out.table(&property_table(
        rows.iter().map(|(l, v)| (l.as_str(), v.clone())).collect(),
    ));
    out.json(table);
    Ok(())
}

fn plain_value(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
