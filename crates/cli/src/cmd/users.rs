//! `user` and `pat` commands (spec §6.8, §6.9).

use super::streams::print_rows;
use crate::args::resources::PermissionArgs;
use crate::args::{PatAction, UserAction};
use crate::cmd::Run;
use crate::credentials::read_password;
use crate::error::{CliError, Context};
use crate::output::warn;
use crate::output::{nested_table, property_table};
use crate::parse::{permissions, sum_expiry};
use crate::render::local;
use crate::secrets;
use iggy::prelude::{
    Identifier, IggyExpiry, Permissions, PersonalAccessTokenClient, StreamPermissions, UserClient,
    UserStatus, UserUpdateOptions,
};
use serde_json::json;

fn status_of(s: crate::args::resources::UserStatusArg) -> UserStatus {
    match s {
        crate::args::resources::UserStatusArg::Active => UserStatus::Active,
        crate::args::resources::UserStatusArg::Inactive => UserStatus::Inactive,
    }
}

fn perms_of(p: &PermissionArgs) -> Option<Permissions> {
    permissions(p.global_permissions.clone(), &p.stream_permissions)
}

pub async fn run(action: UserAction, run: &Run<'_>) -> Result<(), CliError> {
    let (client, out) = (run.client, run.out);
    match action {
        UserAction::Create {
            username: n,
            password,
            user_status,
            permissions,
        } => {
            out.executing(&format!("create user with username: {n}"));
            let user = client
                .create_user(
                    &n,
                    &password,
                    status_of(user_status),
                    perms_of(&permissions),
                )
                .await
                .context(|| format!("Problem creating user (username: {n})"))?;
            out.line(format!("User with username: {n} created"));
            out.json(&user);
        }
        UserAction::Delete { user_id: u } => {
            out.executing(&format!("delete user with ID: {u}"));
            client
                .delete_user(&u)
                .await
                .context(|| format!("Problem deleting user with ID: {u}"))?;
            out.line(format!("User with ID: {u} deleted"));
            out.ok(json!({"user_id": u.to_string()}));
        }
        UserAction::Get { user_id: u } => get(&u, run).await?,
        UserAction::List(mode) => {
            let mode = mode.list_mode;
            out.executing(&format!("list users in {mode} mode"));
            let users = client
                .get_users()
                .await
                .context(|| "Problem getting list of users".to_owned())?;
            out.json(&users);
            if users.is_empty() {
                out.line("No users found!");
                return Ok(());
            }
            let rows = users.iter().map(|u| {
                vec![
                    u.id.to_string(),
                    local(u.created_at),
                    u.status.to_string(),
                    u.username.clone(),
                ]
            });
            print_rows(out, mode, &["ID", "Created", "Status", "Username"], rows);
        }
        UserAction::Name {
            user_id: u,
            username: n,
        } => {
            out.executing(&format!("update user with ID: {u} with username: {n}"));
            client
                .update_user(&u, Some(&n), None, &UserUpdateOptions::default())
                .await
                .context(|| format!("Problem updating user with ID: {u} with username: {n}"))?;
            out.line(format!("User with ID: {u} updated with username: {n}"));
            out.ok(json!({"user_id": u.to_string(), "username": n}));
        }
        UserAction::Status {
            user_id: u,
            status: st,
        } => {
            out.executing(&format!("update user with ID: {u} with status: {st}"));
            client
                .update_user(&u, None, Some(status_of(st)), &UserUpdateOptions::default())
                .await
                .context(|| format!("Problem updating user with ID: {u} with status: {st}"))?;
            out.line(format!("User with ID: {u} updated with status: {st}"));
            out.ok(json!({"user_id": u.to_string(), "status": st.to_string()}));
        }
        UserAction::Password {
            user_id: u,
            current_password,
            new_password,
        } => {
            change_password(&u, current_password, new_password, run).await?;
        }
        UserAction::Permissions {
            user_id: u,
            permissions,
        } => {
            out.executing(&format!("update permissions for user with ID: {u}"));
            client
                .update_permissions(&u, perms_of(&permissions))
                .await
                .context(|| format!("Problem updating permissions for user with ID: {u}"))?;
            out.line(format!("Permissions for user with ID: {u} updated"));
            out.ok(json!({"user_id": u.to_string()}));
        }
    }
    Ok(())
}

/// With `CURRENT_PASSWORD` omitted both passwords are prompted and the two
/// lines print even with `-q` (the quiet exception of §5.2).
async fn change_password(
    u: &Identifier,
    current: Option<String>,
    new: Option<String>,
    run: &Run<'_>,
) -> Result<(), CliError> {
    let loud = current.is_none();
    let say = |text: String| {
        if loud {
            run.out.always(text)
        } else {
            run.out.line(text)
        }
    };
    say(format!("Executing change password for user with ID: {u}"));
    let current = match current {
        Some(p) => p,
        None => read_password("Current password: ", run.policy)?,
    };
    let new = match new {
        Some(p) => p,
        None => read_password("New password: ", run.policy)?,
    };
    run.client
        .change_password(u, &current, &new)
        .await
        .context(|| format!("Problem changing password for user with ID: {u}"))?;
    say(format!("Password for user with ID: {u} changed"));
    run.out.ok(json!({"user_id": u.to_string()}));
    Ok(())
}

async fn get(u: &Identifier, run: &Run<'_>) -> Result<(), CliError> {
    run.out.executing(&format!("get user with ID: {u}"));
    let user = run
        .client
        .get_user(u)
        .await
        .context(|| format!("Problem getting user with ID: {u}"))?;
    let Some(user) = user else {
        return run
            .out
            .not_found(format!("User with ID: {u} was not found"));
    };
    let mut rows = vec![
        ("User ID", user.id.to_string()),
        ("Created", local(user.created_at)),
        ("Status", user.status.to_string()),
        ("Username", user.username.clone()),
    ];
    let mut stream_rows = Vec::new();
    if let Some(p) = &user.permissions {
        let g = &p.global;
        rows.push((
            "Global",
            flags_table(&[
                ("Manage Servers", g.manage_servers),
                ("Read Servers", g.read_servers),
                ("Manage Users", g.manage_users),
                ("Read Users", g.read_users),
                ("Manage Streams", g.manage_streams),
                ("Read Streams", g.read_streams),
                ("Manage Topics", g.manage_topics),
                ("Read Topics", g.read_topics),
                ("Poll Messages", g.poll_messages),
                ("Send Messages", g.send_messages),
            ]),
        ));
        for (id, sp) in p.streams.iter().flatten() {
            stream_rows.push((format!("Stream: {id}"), stream_table(sp)));
        }
    }
    let mut t = property_table(rows);
    for (label, value) in stream_rows {
        t.add_row(vec![label, value]);
    }
    run.out.table(&t);
    run.out.json(&user);
    Ok(())
}

fn flags_table(flags: &[(&str, bool)]) -> String {
    let mut t = nested_table(&["Permission", "Value"]);
    for (name, value) in flags {
        t.add_row(vec![(*name).to_owned(), value.to_string()]);
    }
    t.to_string()
}

fn stream_table(p: &StreamPermissions) -> String {
    let mut t = nested_table(&["Permission", "Value"]);
    for (name, value) in [
        ("Manage Stream", p.manage_stream),
        ("Read Stream", p.read_stream),
        ("Manage Topics", p.manage_topics),
        ("Read Topics", p.read_topics),
        ("Poll Messages", p.poll_messages),
        ("Send Messages", p.send_messages),
    ] {
        t.add_row(vec![name.to_owned(), value.to_string()]);
    }
    for (id, tp) in p.topics.iter().flatten() {
        let inner = flags_table(&[
            ("Manage Topic", tp.manage_topic),
            ("Read Topic", tp.read_topic),
            ("Poll Messages", tp.poll_messages),
            ("Send Messages", tp.send_messages),
        ]);
        t.add_row(vec![format!("Topic: {id}"), inner]);
    }
    t.to_string()
}

pub async fn pats(action: PatAction, run: &Run<'_>) -> Result<(), CliError> {
    let out = run.out;
    match action {
        PatAction::Create {
            name: n,
            expiry,
            store_token,
        } => {
            let x = if expiry.is_empty() {
                "without token expire time".to_owned()
            } else {
                format!("token expire time: {}", sum_expiry(&expiry))
            };
            if store_token {
                run.store.usable().map_err(CliError::message)?;
            }
            out.executing(&format!(
                "create personal access token with name: {n} and {x}"
            ));
            let value = if expiry.is_empty() {
                IggyExpiry::NeverExpire
            } else {
                sum_expiry(&expiry)
            };
            let token = run
                .client
                .create_personal_access_token(&n, value)
                .await
                .context(|| format!("Problem creating personal access token with name: {n}"))?;
            out.line(format!(
                "Personal access token with name: {n} and {x} created"
            ));
            if store_token {
                let server = run.server.as_deref().unwrap_or_default();
                run.store
                    .set(&secrets::pat_service(server), &n, &token.token)
                    .map_err(CliError::message)?;
                out.json(&json!({"name": n}));
            } else {
                if out.quiet {
                    out.always(&token.token);
                } else {
                    out.line(format!("Token: {}", token.token));
                }
                out.json(&json!({"name": n, "token": token.token}));
            }
        }
        PatAction::Delete { name: n } => {
            out.executing(&format!("delete personal access tokens with name: {n}"));
            run.client
                .delete_personal_access_token(&n)
                .await
                .context(|| format!("Problem deleting personal access tokens with name: {n}"))?;
            let server = run.server.as_deref().unwrap_or_default();
            if let Err(e) = run
                .store
                .usable()
                .and_then(|()| run.store.delete(&secrets::pat_service(server), &n))
            {
                warn(&format!("could not remove the stored token {n}: {e}"));
            }
            out.line(format!("Personal access token with name: {n} deleted"));
            out.ok(json!({"name": n}));
        }
        PatAction::List(mode) => {
            let mode = mode.list_mode;
            out.executing(&format!("list personal access tokens in {mode} mode"));
            let tokens = run
                .client
                .get_personal_access_tokens()
                .await
                .context(|| "Problem getting list of personal access tokens".to_owned())?;
            out.json(&tokens);
            let rows = tokens.iter().map(|t| {
                vec![
                    t.name.clone(),
                    t.expiry_at.map_or("unlimited".to_owned(), local),
                ]
            });
            print_rows(out, mode, &["Name", "Token Expiry Time"], rows);
        }
    }
    Ok(())
}
