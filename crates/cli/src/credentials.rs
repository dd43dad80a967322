//! Credential resolution (spec §4.3 with the §8 #4 deviation: credentials
//! typed on the command line win over a stored login session), the password
//! prompt (§4.4) and the login itself.

use crate::error::CliError;
use crate::secrets::{self, SecretStore};
use crate::settings::CredentialFields;
use iggy::prelude::{IggyClient, IggyError, PersonalAccessTokenClient, UserClient};
use std::io::{BufRead, IsTerminal};

#[derive(Debug, Clone)]
pub enum Credentials {
    UserPassword(String, String),
    Token(String),
    /// The login session's token, found under the server address.
    Session(String),
}

/// What the password prompt may do.
#[derive(Debug, Clone, Copy)]
pub struct PromptPolicy {
    pub no_input: bool,
    pub password_stdin: bool,
}

pub struct Resolver<'a> {
    pub fields: &'a CredentialFields,
    pub store: &'a SecretStore,
    pub server: Option<&'a str>,
    pub policy: PromptPolicy,
    pub is_login: bool,
}

impl Resolver<'_> {
    pub fn resolve(&self) -> Result<Credentials, CliError> {
        if !self.fields.explicit
            && !self.is_login
            && let Some(token) = self.session_token()
        {
            return Ok(Credentials::Session(token));
        }
        if let Some(name) = &self.fields.token_name {
            return self.stored_pat(name).map(Credentials::Token);
        }
        if let Some(token) = &self.fields.token {
            return Ok(Credentials::Token(token.clone()));
        }
        if let Some(username) = &self.fields.username {
            let password = match &self.fields.password {
                Some(p) => p.clone(),
                None => read_password("Password: ", self.policy)?,
            };
            return Ok(Credentials::UserPassword(username.clone(), password));
        }
        if let (Ok(u), Ok(p)) = (
            std::env::var("IGGY_USERNAME"),
            std::env::var("IGGY_PASSWORD"),
        ) {
            return Ok(Credentials::UserPassword(u, p));
        }
        if self.is_login
            && let Some(token) = self.session_token()
        {
            return Ok(Credentials::Session(token));
        }
        Err(CliError::tool("Missing iggy server credentials"))
    }

    fn session_token(&self) -> Option<String> {
        let server = self.server?;
        if let Err(e) = self.store.status() {
            crate::output::warn(&format!(
                "keyring backend unavailable, cannot read session token: {e}"
            ));
            return None;
        }
        self.store
            .get(&secrets::session_service(server), secrets::SESSION_ACCOUNT)
            .ok()
            .flatten()
    }

    fn stored_pat(&self, name: &str) -> Result<String, CliError> {
        let Some(server) = self.server else {
            return Err(CliError::tool("Missing iggy server address"));
        };
        self.store.status().map_err(CliError::message)?;
        match self.store.get(&secrets::pat_service(server), name) {
            Ok(Some(token)) => Ok(token),
            Ok(None) => Err(CliError::message(
                "No matching entry found in secure storage".to_owned(),
            )),
            Err(e) => Err(CliError::message(e)),
        }
    }
}

/// Reads a password: from the terminal without echo, or one line of stdin.
pub fn read_password(prompt: &str, policy: PromptPolicy) -> Result<String, CliError> {
    if policy.no_input {
        return Err(CliError::message("password required but --no-input is set"));
    }
    if std::io::stdin().is_terminal() && !policy.password_stdin {
        return rpassword::prompt_password(prompt)
            .map_err(|e| CliError::caused("Problem reading password", e));
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::caused("Problem reading password", e))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_owned())
}

/// Logs in; a rejected session is removed when the server says it is gone.
pub async fn login(
    client: &IggyClient,
    credentials: &Credentials,
    store: &SecretStore,
    server: Option<&str>,
) -> Result<(), CliError> {
    match credentials {
        Credentials::UserPassword(username, password) => client
            .login_user(username, password)
            .await
            .map(|_| ())
            .map_err(|e| {
                CliError::iggy(
                    format!("Problem with server login for username: {username}"),
                    &e,
                )
            }),
        Credentials::Token(token) => client
            .login_with_personal_access_token(token)
            .await
            .map(|_| ())
            .map_err(|e| CliError::iggy("Problem with server login with token", &e)),
        Credentials::Session(token) => {
            let Err(e) = client.login_with_personal_access_token(token).await else {
                return Ok(());
            };
            let gone = matches!(
                e,
                IggyError::Unauthenticated
                    | IggyError::ResourceNotFound(_)
                    | IggyError::PersonalAccessTokenExpired(..)
            );
            match server {
                Some(server) if gone => {
                    let _ =
                        store.delete(&secrets::session_service(server), secrets::SESSION_ACCOUNT);
                    Err(CliError::message(format!(
                        "Login session expired for Iggy server: {server}, please login again or use other authentication method"
                    )))
                }
                _ => Err(CliError::iggy("Problem with server login with token", &e)),
            }
        }
    }
}

/// Whether the credentials came from the stored session.
pub fn is_session(credentials: Option<&Credentials>) -> bool {
    matches!(credentials, Some(Credentials::Session(_)))
}
