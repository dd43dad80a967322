//! Decoders for every request body of spec 10 and 11.1, one file per
//! command family.
//!
//! Each decoder borrows from the body it is given (names as `&str`,
//! blocks as `&[u8]`), consumes it exactly and rejects trailing bytes, bad
//! lengths and unknown enum values with a [`DecodeError`]; the server
//! answers those with status 3 (`InvalidCommand`). [`Request::decode`]
//! dispatches on a command code. Logins are decoded by
//! [`LoginRequest::decode`], whose failures map to eviction reasons.

mod consumer_groups;
mod consumer_offsets;
mod login;
mod messages;
mod partitions;
mod streams;
mod system;
mod tokens;
mod topics;
mod users;

pub use consumer_groups::{CreateConsumerGroup, GroupRef};
pub use consumer_offsets::{AckLevel, DeleteConsumerOffset, OffsetTarget, StoreConsumerOffset};
pub use login::{
    ClientVersionInfo, LoginCredentials, LoginError, LoginRequest, PROTOCOL_VERSION,
    PROTOCOL_VERSION_MIN, is_protocol_compatible, pack_version,
};
pub use messages::{FlushUnsavedBuffer, PollMessages, SendMessages};
pub use partitions::{DeleteSegments, PartitionsChange};
pub use streams::{CreateStream, StreamRef, UpdateStream};
pub use system::{AttachConsumerSession, DescribeOptions, GetClient, GetSnapshot, OptionsScope};
pub use tokens::{CreatePersonalAccessToken, DeletePersonalAccessToken};
pub use topics::{CreateTopic, TopicRef, UpdateTopic};
pub use users::{ChangePassword, CreateUser, UpdatePermissions, UpdateUser, UserRef, UserStatus};

use crate::codes::CommandCode;
use crate::primitives::Options;
use crate::wire::{DecodeError, Reader};

/// Runs `read` over the whole body and rejects anything left over.
pub(crate) fn exact<'a, T>(
    body: &'a [u8],
    read: impl FnOnce(&mut Reader<'a>) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    let mut r = Reader::new(body);
    let value = read(&mut r)?;
    r.finish()?;
    Ok(value)
}

/// An unprefixed options block running to the end of the body.
pub(crate) fn options_to_end<'a>(r: &mut Reader<'a>) -> Result<Options<'a>, DecodeError> {
    Options::parse(r.rest()).map_err(|source| DecodeError::KeyValue {
        field: "options",
        source,
    })
}

/// Every request, decoded by command code.
#[derive(Debug, Clone, PartialEq)]
pub enum Request<'a> {
    Ping,
    GetStats,
    GetSnapshot(GetSnapshot<'a>),
    GetClusterMetadata,
    DescribeOptions(DescribeOptions),
    AttachConsumerSession(AttachConsumerSession),
    GetMe,
    GetClient(GetClient),
    GetClients,
    GetUser(UserRef<'a>),
    GetUsers,
    CreateUser(CreateUser<'a>),
    DeleteUser(UserRef<'a>),
    UpdateUser(UpdateUser<'a>),
    UpdatePermissions(UpdatePermissions<'a>),
    ChangePassword(ChangePassword<'a>),
    /// Codes 38 and 44: never decoded; the answer is Eviction 15.
    LegacyLogin,
    Logout,
    Login(LoginRequest<'a>),
    GetPersonalAccessTokens,
    CreatePersonalAccessToken(CreatePersonalAccessToken<'a>),
    DeletePersonalAccessToken(DeletePersonalAccessToken<'a>),
    PollMessages(PollMessages<'a>),
    SendMessages(SendMessages<'a>),
    FlushUnsavedBuffer(FlushUnsavedBuffer<'a>),
    GetPollRouting(PollMessages<'a>),
    PollMessagesOnPrimary(PollMessages<'a>),
    GetConsumerOffset(OffsetTarget<'a>),
    StoreConsumerOffset(StoreConsumerOffset<'a>),
    DeleteConsumerOffset(DeleteConsumerOffset<'a>),
    GetConsumerOffsetRouting(OffsetTarget<'a>),
    GetStream(StreamRef<'a>),
    GetStreams,
    CreateStream(CreateStream<'a>),
    DeleteStream(StreamRef<'a>),
    UpdateStream(UpdateStream<'a>),
    PurgeStream(StreamRef<'a>),
    GetTopic(TopicRef<'a>),
    GetTopics(StreamRef<'a>),
    CreateTopic(CreateTopic<'a>),
    DeleteTopic(TopicRef<'a>),
    UpdateTopic(UpdateTopic<'a>),
    PurgeTopic(TopicRef<'a>),
    CreatePartitions(PartitionsChange<'a>),
    DeletePartitions(PartitionsChange<'a>),
    DeleteSegments(DeleteSegments<'a>),
    GetConsumerGroup(GroupRef<'a>),
    GetConsumerGroups(TopicRef<'a>),
    CreateConsumerGroup(CreateConsumerGroup<'a>),
    DeleteConsumerGroup(GroupRef<'a>),
    JoinConsumerGroup(GroupRef<'a>),
    LeaveConsumerGroup(GroupRef<'a>),
    SyncConsumerGroup(GroupRef<'a>),
}

/// Succeeds only for an empty body.
pub fn empty(body: &[u8]) -> Result<(), DecodeError> {
    Reader::new(body).finish()
}

impl<'a> Request<'a> {
    /// Decodes `body` as the request of `code`. Login bodies fail here
    /// with the decode error of their prefix or shape; a server should call
    /// [`LoginRequest::decode`] directly to learn the eviction reason.
    pub fn decode(code: CommandCode, body: &'a [u8]) -> Result<Self, DecodeError> {
        use CommandCode as C;
        let request = match code {
            C::Ping => empty(body).map(|()| Self::Ping)?,
            C::GetStats => empty(body).map(|()| Self::GetStats)?,
            C::GetSnapshotFile => Self::GetSnapshot(GetSnapshot::decode(body)?),
            C::GetClusterMetadata => empty(body).map(|()| Self::GetClusterMetadata)?,
            C::DescribeOptions => Self::DescribeOptions(DescribeOptions::decode(body)?),
            C::AttachConsumerSession => {
                Self::AttachConsumerSession(AttachConsumerSession::decode(body)?)
            }
            C::GetMe => empty(body).map(|()| Self::GetMe)?,
            C::GetClient => Self::GetClient(GetClient::decode(body)?),
            C::GetClients => empty(body).map(|()| Self::GetClients)?,
            C::LoginUser | C::LoginWithPersonalAccessToken => Self::LegacyLogin,
            C::LogoutUser => empty(body).map(|()| Self::Logout)?,
            C::LoginRegister | C::LoginRegisterWithPat => {
                Self::Login(LoginRequest::decode(body).map_err(LoginError::into_decode_error)?)
            }
            C::GetPersonalAccessTokens => empty(body).map(|()| Self::GetPersonalAccessTokens)?,
            C::CreatePersonalAccessToken => {
                Self::CreatePersonalAccessToken(CreatePersonalAccessToken::decode(body)?)
            }
            C::DeletePersonalAccessToken => {
                Self::DeletePersonalAccessToken(DeletePersonalAccessToken::decode(body)?)
            }
            _ => return Self::decode_resource(code, body),
        };
        Ok(request)
    }

    fn decode_resource(code: CommandCode, body: &'a [u8]) -> Result<Self, DecodeError> {
        use CommandCode as C;
        let request = match code {
            C::GetUser => Self::GetUser(UserRef::decode(body)?),
            C::GetUsers => empty(body).map(|()| Self::GetUsers)?,
            C::CreateUser => Self::CreateUser(CreateUser::decode(body)?),
            C::DeleteUser => Self::DeleteUser(UserRef::decode(body)?),
            C::UpdateUser => Self::UpdateUser(UpdateUser::decode(body)?),
            C::UpdatePermissions => Self::UpdatePermissions(UpdatePermissions::decode(body)?),
            C::ChangePassword => Self::ChangePassword(ChangePassword::decode(body)?),
            C::GetStream => Self::GetStream(StreamRef::decode(body)?),
            C::GetStreams => empty(body).map(|()| Self::GetStreams)?,
            C::CreateStream => Self::CreateStream(CreateStream::decode(body)?),
            C::DeleteStream => Self::DeleteStream(StreamRef::decode(body)?),
            C::UpdateStream => Self::UpdateStream(UpdateStream::decode(body)?),
            C::PurgeStream => Self::PurgeStream(StreamRef::decode(body)?),
            C::GetTopic => Self::GetTopic(TopicRef::decode(body)?),
            C::GetTopics => Self::GetTopics(StreamRef::decode(body)?),
            C::CreateTopic => Self::CreateTopic(CreateTopic::decode(body)?),
            C::DeleteTopic => Self::DeleteTopic(TopicRef::decode(body)?),
            C::UpdateTopic => Self::UpdateTopic(UpdateTopic::decode(body)?),
            C::PurgeTopic => Self::PurgeTopic(TopicRef::decode(body)?),
            C::CreatePartitions => Self::CreatePartitions(PartitionsChange::decode(body)?),
            C::DeletePartitions => Self::DeletePartitions(PartitionsChange::decode(body)?),
            C::DeleteSegments => Self::DeleteSegments(DeleteSegments::decode(body)?),
            _ => return Self::decode_data(code, body),
        };
        Ok(request)
    }

    fn decode_data(code: CommandCode, body: &'a [u8]) -> Result<Self, DecodeError> {
        use CommandCode as C;
        let request = match code {
            C::PollMessages => Self::PollMessages(PollMessages::decode(body)?),
            C::SendMessages => Self::SendMessages(SendMessages::decode(body)?),
            C::FlushUnsavedBuffer => Self::FlushUnsavedBuffer(FlushUnsavedBuffer::decode(body)?),
            C::GetPollRouting => Self::GetPollRouting(PollMessages::decode(body)?),
            C::PollMessagesOnPrimary => Self::PollMessagesOnPrimary(PollMessages::decode(body)?),
            C::GetConsumerOffset => Self::GetConsumerOffset(OffsetTarget::decode(body)?),
            C::StoreConsumerOffset => Self::StoreConsumerOffset(StoreConsumerOffset::decode(body)?),
            C::DeleteConsumerOffset => {
                Self::DeleteConsumerOffset(DeleteConsumerOffset::decode(body)?)
            }
            C::GetConsumerOffsetRouting => {
                Self::GetConsumerOffsetRouting(OffsetTarget::decode(body)?)
            }
            C::GetConsumerGroup => Self::GetConsumerGroup(GroupRef::decode(body)?),
            C::GetConsumerGroups => Self::GetConsumerGroups(TopicRef::decode(body)?),
            C::CreateConsumerGroup => Self::CreateConsumerGroup(CreateConsumerGroup::decode(body)?),
            C::DeleteConsumerGroup => Self::DeleteConsumerGroup(GroupRef::decode(body)?),
            C::JoinConsumerGroup => Self::JoinConsumerGroup(GroupRef::decode(body)?),
            C::LeaveConsumerGroup => Self::LeaveConsumerGroup(GroupRef::decode(body)?),
            C::SyncConsumerGroup => Self::SyncConsumerGroup(GroupRef::decode(body)?),
            _ => unreachable!("decode and decode_resource cover every other code"),
        };
        Ok(request)
    }
}

#[cfg(test)]
pub(crate) mod sdk {
    //! Conversions from the SDK's wire types, for golden tests.
    use crate::primitives::{Consumer, ConsumerKind, Identifier};
    use iggy_binary_protocol::{WireConsumer, WireIdentifier};

    pub fn id(sdk: &WireIdentifier) -> Identifier<'_> {
        match sdk {
            WireIdentifier::Numeric(n) => Identifier::Numeric(*n),
            WireIdentifier::String(name) => Identifier::Name(name.as_str()),
        }
    }

    pub fn consumer(sdk: &WireConsumer) -> Consumer<'_> {
        let kind = if sdk.kind == 1 {
            ConsumerKind::Consumer
        } else {
            ConsumerKind::ConsumerGroup
        };
        Consumer {
            kind,
            id: id(&sdk.id),
        }
    }

    pub fn named(name: &str) -> WireIdentifier {
        WireIdentifier::named(name).expect("test names are valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_empty_bodies_when_decoding_bodiless_commands_should_accept_and_reject_extra_bytes() {
        for code in [
            CommandCode::Ping,
            CommandCode::GetStats,
            CommandCode::GetMe,
            CommandCode::GetStreams,
            CommandCode::LogoutUser,
        ] {
            assert!(Request::decode(code, &[]).is_ok(), "{code:?}");
            assert!(Request::decode(code, &[0]).is_err(), "{code:?}");
        }
        assert_eq!(
            Request::decode(CommandCode::LoginUser, b"anything"),
            Ok(Request::LegacyLogin)
        );
    }
}
