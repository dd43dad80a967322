//! `login`, `logout` and `session status` (spec §4.5, §6.14): the login
//! session is a PAT named `iggy-cli-session` whose value is kept in the
//! secret store under the server address.

use crate::args::system::LoginArgs;
use crate::cmd::Run;
use crate::credentials::Credentials;
use crate::credentials::is_session;
use crate::error::{CliError, Context};
use crate::output::warn;
use crate::output::{Out, property_table};
use crate::parse::sum_expiry;
use crate::secrets::{SESSION_ACCOUNT, SecretStore, session_service};
use iggy::prelude::{IggyDuration, IggyExpiry, IggyTimestamp, PersonalAccessTokenClient};
use std::time::Duration;

/// How long a login session lasts when `login` is given no expiry.
const DEFAULT_SESSION_SECS: u64 = 15 * 60;

fn stored_session(store: &SecretStore, server: &str) -> Option<String> {
    if let Err(e) = store.status() {
        warn(&format!(
            "keyring backend unavailable, treating session as inactive: {e}"
        ));
        return None;
    }
    store
        .get(&session_service(server), SESSION_ACCOUNT)
        .ok()
        .flatten()
}

pub fn status(server: &str, store: &SecretStore, out: &Out) {
    out.executing("session status command");
    let active = stored_session(store, server).is_some();
    let shown = if active {
        "Yes (token presence only, freshness not verified)"
    } else {
        "No"
    };
    out.table(&property_table(vec![
        ("Server Address", server.to_owned()),
        ("Session Active", shown.to_owned()),
    ]));
    out.json(&serde_json::json!({"server_address": server, "session_active": active}));
}

pub async fn login(a: LoginArgs, run: &Run<'_>) -> Result<(), CliError> {
    let server = run.server.clone().unwrap_or_default();
    run.store.status().map_err(CliError::message)?;
    run.out.executing("login command");
    let tokens = run
        .client
        .get_personal_access_tokens()
        .await
        .context(|| format!("Problem getting personal access tokens from server: {server}"))?;
    let on_server = tokens.iter().find(|t| t.name == SESSION_ACCOUNT);
    let service = session_service(&server);
    if stored_session(run.store, &server).is_some() {
        let now = IggyTimestamp::now();
        if on_server.is_some_and(|t| t.expiry_at.is_none_or(|e| e.as_micros() > now.as_micros())) {
            run.out
                .line(format!("Already logged into Iggy server {server}"));
            run.out
                .ok(serde_json::json!({"server_address": server, "already": true}));
            return Ok(());
        }
        let _ = run.store.delete(&service, SESSION_ACCOUNT);
    }
    if on_server.is_some() {
        run.client
            .delete_personal_access_token(SESSION_ACCOUNT)
            .await
            .context(|| {
                format!("Problem deleting old personal access token with name: {SESSION_ACCOUNT}")
            })?;
    }
    let expiry = if a.expiry.is_empty() {
        IggyExpiry::ExpireDuration(IggyDuration::from(Duration::from_secs(
            DEFAULT_SESSION_SECS,
        )))
    } else {
        sum_expiry(&a.expiry)
    };
    let token = run
        .client
        .create_personal_access_token(SESSION_ACCOUNT, expiry)
        .await
        .context(|| {
            format!("Problem creating personal access token with name: {SESSION_ACCOUNT}")
        })?;
    run.store
        .set(&service, SESSION_ACCOUNT, &token.token)
        .map_err(CliError::message)?;
    run.out
        .line(format!("Successfully logged into Iggy server {server}"));
    run.out.ok(serde_json::json!({"server_address": server}));
    Ok(())
}

pub async fn logout(run: &Run<'_>, credentials: Option<&Credentials>) -> Result<(), CliError> {
    let server = run.server.clone().unwrap_or_default();
    run.out.executing("logout command");
    if is_session(credentials) || stored_session(run.store, &server).is_some() {
        run.client
            .delete_personal_access_token(SESSION_ACCOUNT)
            .await
            .context(|| {
                format!("Problem deleting personal access token with name: {SESSION_ACCOUNT}")
            })?;
        let _ = run.store.delete(&session_service(&server), SESSION_ACCOUNT);
    }
    run.out
        .line(format!("Successfully logged out from Iggy server {server}"));
    run.out.ok(serde_json::json!({"server_address": server}));
    Ok(())
}
