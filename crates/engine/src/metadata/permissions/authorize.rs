//! The authorizer: the rules table of storage spec §12, one [`Action`] per
//! row, each rule an "any of" over global (G), stream (S) and topic (T) flags.
//!
//! The root user (ID 0) is always allowed, as are server-originated
//! operations, which carry user 0.
//!
//! "Not found passes through": actions name already-resolved IDs. When a
//! request's stream or topic cannot be resolved the caller skips the check
//! and answers with the not-found error, so a caller never learns about
//! denial for a resource that does not exist. A stream or topic ID without an
//! entry in the user's permissions simply contributes no flags.

use super::{GlobalPermissions, Permissions, StreamPermissions, TopicPermissions};
use crate::metadata::ids::{StreamId, TopicId, UserId};

/// Who asks: the acting user and its permissions (`None` = no permissions).
#[derive(Clone, Copy, Debug)]
pub struct Subject<'a> {
    pub user_id: UserId,
    pub permissions: Option<&'a Permissions>,
}

/// One row of the rules table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Stats, clients, client details, snapshot.
    ReadServers,
    /// List users (`target: None`) or get one user.
    ReadUsers {
        target: Option<UserId>,
    },
    /// Create, update, delete a user; update permissions.
    ManageUsers,
    ChangePassword {
        target: UserId,
    },
    ListStreams,
    GetStream {
        stream: StreamId,
    },
    CreateStream,
    /// Update, delete, purge a stream.
    ManageStream {
        stream: StreamId,
    },
    ListTopics {
        stream: StreamId,
    },
    /// Get a topic and every consumer-group operation.
    ReadTopic {
        stream: StreamId,
        topic: TopicId,
    },
    CreateTopic {
        stream: StreamId,
    },
    /// Update, delete, purge a topic; create/delete partitions; delete segments.
    ManageTopic {
        stream: StreamId,
        topic: TopicId,
    },
    /// Poll messages; get, store, delete consumer offsets.
    PollMessages {
        stream: StreamId,
        topic: TopicId,
    },
    SendMessages {
        stream: StreamId,
        topic: TopicId,
    },
    /// List, create, delete one's own personal access tokens.
    ManageOwnTokens,
    /// Cluster metadata, option catalogue, metrics.
    Authenticated,
}

impl Action {
    /// A short verb phrase for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Action::ReadServers => "read server information",
            Action::ReadUsers { .. } => "read users",
            Action::ManageUsers => "manage users",
            Action::ChangePassword { .. } => "change this password",
            Action::ListStreams => "list streams",
            Action::GetStream { .. } => "read this stream",
            Action::CreateStream => "create streams",
            Action::ManageStream { .. } => "manage this stream",
            Action::ListTopics { .. } => "list topics",
            Action::ReadTopic { .. } => "read this topic",
            Action::CreateTopic { .. } => "create topics",
            Action::ManageTopic { .. } => "manage this topic",
            Action::PollMessages { .. } => "poll messages",
            Action::SendMessages { .. } => "send messages",
            Action::ManageOwnTokens => "manage tokens",
            Action::Authenticated => "use the server",
        }
    }
}

/// Decides whether `subject` may perform `action`.
pub fn authorize(subject: Subject<'_>, action: Action) -> bool {
    if always_allowed(subject.user_id, action) {
        return true;
    }
    let Some(permissions) = subject.permissions else {
        return false;
    };
    let g = &permissions.global;
    match action {
        Action::ReadServers => g.manage_servers || g.read_servers,
        Action::ReadUsers { .. } => g.manage_users || g.read_users,
        Action::ManageUsers | Action::ChangePassword { .. } => g.manage_users,
        Action::ListStreams => g.manage_streams || g.read_streams,
        Action::CreateStream => g.manage_streams,
        Action::GetStream { stream } => {
            g.manage_streams
                || g.read_streams
                || stream_flag(permissions, stream, |s| s.manage_stream || s.read_stream)
        }
        Action::ManageStream { stream } => {
            g.manage_streams || stream_flag(permissions, stream, |s| s.manage_stream)
        }
        Action::ListTopics { stream } => {
            read_topics_global(g) || stream_flag(permissions, stream, read_topics_stream)
        }
        Action::ReadTopic { stream, topic } => {
            read_topics_global(g)
                || stream_flag(permissions, stream, read_topics_stream)
                || topic_flag(permissions, stream, topic, |t| {
                    t.manage_topic || t.read_topic
                })
        }
        Action::CreateTopic { stream } => {
            manage_topics_global(g) || stream_flag(permissions, stream, manage_topics_stream)
        }
        Action::ManageTopic { stream, topic } => {
            manage_topics_global(g)
                || stream_flag(permissions, stream, manage_topics_stream)
                || topic_flag(permissions, stream, topic, |t| t.manage_topic)
        }
        Action::PollMessages { stream, topic } => {
            g.poll_messages
                || read_topics_global(g)
                || stream_flag(permissions, stream, |s| {
                    s.poll_messages || read_topics_stream(s)
                })
                || topic_flag(permissions, stream, topic, |t| {
                    t.manage_topic || t.read_topic || t.poll_messages
                })
        }
        Action::SendMessages { stream, topic } => {
            g.send_messages
                || manage_topics_global(g)
                || stream_flag(permissions, stream, |s| {
                    s.send_messages || manage_topics_stream(s)
                })
                || topic_flag(permissions, stream, topic, |t| {
                    t.manage_topic || t.send_messages
                })
        }
        Action::ManageOwnTokens | Action::Authenticated => true,
    }
}

/// Root, own tokens, plain authenticated reads, and acting on oneself.
fn always_allowed(user: UserId, action: Action) -> bool {
    match action {
        _ if user.is_root() => true,
        Action::ManageOwnTokens | Action::Authenticated => true,
        Action::ReadUsers {
            target: Some(target),
        }
        | Action::ChangePassword { target } => target == user,
        _ => false,
    }
}

fn read_topics_global(g: &GlobalPermissions) -> bool {
    g.read_streams || g.manage_streams || g.manage_topics || g.read_topics
}

fn manage_topics_global(g: &GlobalPermissions) -> bool {
    g.manage_streams || g.manage_topics
}

fn read_topics_stream(s: &StreamPermissions) -> bool {
    s.manage_stream || s.read_stream || s.manage_topics || s.read_topics
}

fn manage_topics_stream(s: &StreamPermissions) -> bool {
    s.manage_stream || s.manage_topics
}

fn stream_flag(
    p: &Permissions,
    stream: StreamId,
    flag: impl Fn(&StreamPermissions) -> bool,
) -> bool {
    p.streams.get(&stream).is_some_and(flag)
}

fn topic_flag(
    p: &Permissions,
    stream: StreamId,
    topic: TopicId,
    flag: impl Fn(&TopicPermissions) -> bool,
) -> bool {
    p.streams
        .get(&stream)
        .and_then(|s| s.topics.get(&topic))
        .is_some_and(flag)
}

#[cfg(test)]
#[path = "authorize_tests.rs"]
mod tests;
