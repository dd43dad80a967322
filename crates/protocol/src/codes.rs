//! The command codes of the 0.11.0 registry (spec 9) and how they relate to
//! the header's operation byte (spec 4.2, 7.3).
//!
//! A NonReplicated request carries its code in header bytes 196..200; a
//! replicated request carries only its operation, so the server maps the
//! operation back to the command ([`Operation::command_code`]). Register
//! stands for both login codes (40 and 45): the body shape tells them apart.
//! [`route`] turns a validated request header into the thing to dispatch.

use crate::kinds::Operation;

macro_rules! command_codes {
    ($($variant:ident = $code:literal, $name:literal, $operation:ident;)+) => {
        /// Every command code of the 0.11.0 registry.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum CommandCode {
            $($variant = $code,)+
        }

        impl CommandCode {
            /// Every code, in registry order.
            pub const ALL: &'static [CommandCode] = &[$(CommandCode::$variant,)+];

            pub const fn from_u32(code: u32) -> Option<Self> {
                match code {
                    $($code => Some(Self::$variant),)+
                    _ => None,
                }
            }

            /// The registry name, e.g. `"stream.create"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)+
                }
            }

            /// The operation SDK 0.11.0 puts in the header for this code.
            pub const fn operation(self) -> Operation {
                match self {
                    $(Self::$variant => Operation::$operation,)+
                }
            }
        }
    };
}

command_codes! {
    Ping = 1, "ping", NonReplicated;
    GetStats = 10, "stats", NonReplicated;
    GetSnapshotFile = 11, "snapshot", NonReplicated;
    GetClusterMetadata = 12, "cluster.metadata", NonReplicated;
    DescribeOptions = 13, "options.describe", NonReplicated;
    AttachConsumerSession = 14, "consumer_session.attach", NonReplicated;
    GetMe = 20, "me", NonReplicated;
    GetClient = 21, "client.get", NonReplicated;
    GetClients = 22, "client.list", NonReplicated;
    GetUser = 31, "user.get", NonReplicated;
    GetUsers = 32, "user.list", NonReplicated;
    CreateUser = 33, "user.create", CreateUser;
    DeleteUser = 34, "user.delete", DeleteUser;
    UpdateUser = 35, "user.update", UpdateUser;
    UpdatePermissions = 36, "user.permissions", UpdatePermissions;
    ChangePassword = 37, "user.password", ChangePassword;
    LoginUser = 38, "user.login", NonReplicated;
    LogoutUser = 39, "user.logout", Logout;
    LoginRegister = 40, "user.login_register", Register;
    GetPersonalAccessTokens = 41, "personal_access_token.list", NonReplicated;
    CreatePersonalAccessToken = 42, "personal_access_token.create", CreatePersonalAccessToken;
    DeletePersonalAccessToken = 43, "personal_access_token.delete", DeletePersonalAccessToken;
    LoginWithPersonalAccessToken = 44, "personal_access_token.login", NonReplicated;
    LoginRegisterWithPat = 45, "user.login_register_with_pat", Register;
    PollMessages = 100, "message.poll", NonReplicated;
    SendMessages = 101, "message.send", SendMessages;
    FlushUnsavedBuffer = 102, "message.flush_unsaved_buffer", NonReplicated;
    GetPollRouting = 103, "message.poll_routing", NonReplicated;
    PollMessagesOnPrimary = 104, "message.poll_primary", NonReplicated;
    GetConsumerOffset = 120, "consumer_offset.get", NonReplicated;
    StoreConsumerOffset = 121, "consumer_offset.store", StoreConsumerOffset;
    DeleteConsumerOffset = 122, "consumer_offset.delete", DeleteConsumerOffset;
    GetConsumerOffsetRouting = 123, "consumer_offset.routing", NonReplicated;
    GetStream = 200, "stream.get", NonReplicated;
    GetStreams = 201, "stream.list", NonReplicated;
    CreateStream = 202, "stream.create", CreateStream;
    DeleteStream = 203, "stream.delete", DeleteStream;
    UpdateStream = 204, "stream.update", UpdateStream;
    PurgeStream = 205, "stream.purge", PurgeStream;
    GetTopic = 300, "topic.get", NonReplicated;
    GetTopics = 301, "topic.list", NonReplicated;
    CreateTopic = 302, "topic.create", CreateTopic;
    DeleteTopic = 303, "topic.delete", DeleteTopic;
    UpdateTopic = 304, "topic.update", UpdateTopic;
    PurgeTopic = 305, "topic.purge", PurgeTopic;
    CreatePartitions = 402, "partition.create", CreatePartitions;
    DeletePartitions = 403, "partition.delete", DeletePartitions;
    DeleteSegments = 503, "segment.delete", DeleteSegments;
    GetConsumerGroup = 600, "consumer_group.get", NonReplicated;
    GetConsumerGroups = 601, "consumer_group.list", NonReplicated;
    CreateConsumerGroup = 602, "consumer_group.create", CreateConsumerGroup;
    DeleteConsumerGroup = 603, "consumer_group.delete", DeleteConsumerGroup;
    JoinConsumerGroup = 604, "consumer_group.join", JoinConsumerGroup;
    LeaveConsumerGroup = 605, "consumer_group.leave", LeaveConsumerGroup;
    SyncConsumerGroup = 606, "consumer_group.sync", NonReplicated;
}

impl CommandCode {
    pub const fn as_u32(self) -> u32 {
        self as u32
    }

    /// The legacy login codes SDK 0.11.0 never sends; a server answers them
    /// with Eviction 15 (spec 7.3.1).
    pub const fn is_legacy_login(self) -> bool {
        matches!(self, Self::LoginUser | Self::LoginWithPersonalAccessToken)
    }
}

impl Operation {
    /// The command a replicated operation stands for (Logout and the client
    /// writes). `None` for Register (two codes), NonReplicated (code in the
    /// header), Reserved and the internal operations.
    pub fn command_code(self) -> Option<CommandCode> {
        if matches!(self, Operation::Register | Operation::NonReplicated) {
            return None;
        }
        CommandCode::ALL
            .iter()
            .copied()
            .find(|code| code.operation() == self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iggy_binary_protocol::dispatch::{COMMAND_TABLE, lookup_command};

    #[test]
    fn given_sdk_registry_when_comparing_should_hold_the_same_codes_and_names() {
        assert_eq!(COMMAND_TABLE.len(), CommandCode::ALL.len());
        for &code in CommandCode::ALL {
            let meta = lookup_command(code.as_u32()).expect("SDK knows every code we list");
            assert_eq!(meta.name, code.name());
            assert_eq!(CommandCode::from_u32(code.as_u32()), Some(code));
        }
    }

    #[test]
    fn given_sdk_operation_choice_when_comparing_should_agree_for_every_code() {
        use iggy_binary_protocol::Operation as Sdk;
        for &code in CommandCode::ALL {
            let sdk = match code {
                CommandCode::LoginRegister | CommandCode::LoginRegisterWithPat => Sdk::Register,
                CommandCode::LogoutUser => Sdk::Logout,
                _ => Sdk::from_command_code(code.as_u32()).unwrap_or(Sdk::NonReplicated),
            };
            assert_eq!(sdk as u8, code.operation().as_u8(), "{code:?}");
        }
    }

    #[test]
    fn given_replicated_operations_when_mapping_back_should_find_their_command() {
        for op in Operation::ALL {
            let back = op.command_code();
            match op {
                Operation::Logout => assert_eq!(back, Some(CommandCode::LogoutUser)),
                _ if op.is_metadata_write() || op.is_partition_write() => {
                    assert_eq!(back.map(CommandCode::operation), Some(op));
                    assert_eq!(back.map(CommandCode::as_u32), op_code_in_sdk(op));
                }
                _ => assert_eq!(back, None, "{op:?}"),
            }
        }
    }

    fn op_code_in_sdk(op: Operation) -> Option<u32> {
        let sdk: iggy_binary_protocol::Operation = bytemuck::checked::cast(op.as_u8());
        sdk.to_command_code()
    }
}
