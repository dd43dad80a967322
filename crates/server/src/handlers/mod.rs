//! Command handlers: one module per command family. `dispatch` decodes the
//! body for the command code and calls the handler; handlers read this
//! shard's metadata replica, submit metadata operations to the committer, or
//! call the shard that owns a partition. Each handler answers with one
//! [`Reply`], which the session hands to its transport.

pub mod convert;
mod groups;
pub mod messages;
pub mod reply;
mod routing;
mod streams;
pub mod system;
pub mod topics;
pub mod users;
pub mod write;

use protocol::header::RequestHeader;
use protocol::reply::ReplyBuilder;
use protocol::requests::Request;
use protocol::{CommandCode, ErrorCode};

use crate::node::Shard;
use crate::node::clients::Bound;
pub use reply::Reply;

/// What a handler may see of the session that sent the command.
#[derive(Clone, Copy)]
pub struct SessionRef<'s> {
    pub shard: &'s Shard,
    /// Server-side connection number (client records are keyed by it).
    pub connection_id: u64,
    /// The partition (namespace) the request used, noted by the send and
    /// poll handlers for the connection's shard affinity
    /// (`session::moving`).
    pub partition: &'s std::cell::Cell<Option<u64>>,
}

/// What every handler gets.
pub struct Call<'s> {
    pub session: SessionRef<'s>,
    pub bound: Bound,
    pub header: &'s RequestHeader,
    /// Overrides the echoed operation of the reply (DeleteSegments).
    pub reply_operation: Option<protocol::header::Operation>,
}

impl Call<'_> {
    pub fn builder(&self) -> ReplyBuilder {
        let builder = ReplyBuilder::for_request(self.header).op(self.bound.session);
        match self.reply_operation {
            Some(operation) => builder.operation(operation),
            None => builder,
        }
    }

    /// A successful raw (or result-framed, by operation) reply.
    pub fn ok(&self, payload: &[u8]) -> Reply {
        Reply::frame(self.builder().success(payload))
    }

    /// A successful reply whose body travels in parts (no copy).
    pub fn ok_parts(&self, body_len: usize, body: impl Iterator<Item = bytes::Bytes>) -> Reply {
        let builder = self.builder();
        let prefix = builder.success_prefix();
        let mut parts = vec![bytes::Bytes::copy_from_slice(
            &builder.success_header(body_len),
        )];
        if !prefix.is_empty() {
            parts.push(bytes::Bytes::from_static(prefix));
        }
        parts.extend(body);
        Reply::parts(parts)
    }

    /// A status denial with an empty body.
    pub fn deny(&self, code: ErrorCode) -> Reply {
        Reply::frame(self.builder().denial(code))
    }

    pub fn node(&self) -> &crate::node::Node {
        &self.session.shard.node
    }

    pub fn user(&self) -> engine::metadata::UserId {
        engine::metadata::UserId(self.bound.user_id)
    }
}

/// Runs one command; `frame` is the whole request (header and body), owned
/// so that a sent batch can be stored without copying.
pub async fn dispatch(
    session: SessionRef<'_>,
    bound: Bound,
    header: &RequestHeader,
    code: CommandCode,
    frame: Vec<u8>,
) -> Reply {
    let call = Call {
        session,
        bound,
        header,
        reply_operation: None,
    };
    if code == CommandCode::SendMessages {
        return messages::send(call, frame).await;
    }
    let body = &frame[protocol::header::HEADER_SIZE..];
    let request = match Request::decode(code, body) {
        Ok(request) => request,
        Err(e) => {
            tracing::debug!(code = code.as_u32(), "undecodable request body: {e}");
            return call.deny(ErrorCode::InvalidCommand);
        }
    };
    route(call, request).await
}

/// The stream, topic and partition a request names, as its telemetry
/// span records them (identifiers as the client sent them: a number or a
/// name). Nothing when telemetry is off.
fn record_scope(request: &Request<'_>) {
    use Request as R;
    use protocol::primitives::Identifier;
    use protocol::requests::TopicRef;
    if !crate::telemetry::enabled() {
        return;
    }
    fn text(id: &Identifier<'_>) -> String {
        match id {
            Identifier::Numeric(n) => n.to_string(),
            Identifier::Name(name) => (*name).to_owned(),
        }
    }
    let topic = |t: &TopicRef<'_>, partition: Option<u32>| {
        (Some(text(&t.stream_id)), Some(text(&t.topic_id)), partition)
    };
    let (stream, topic, partition) = match request {
        R::GetStream(r) | R::DeleteStream(r) | R::PurgeStream(r) | R::GetTopics(r) => {
            (Some(text(&r.stream_id)), None, None)
        }
        R::UpdateStream(r) => (Some(text(&r.stream_id)), None, None),
        R::CreateTopic(r) => (Some(text(&r.stream_id)), None, None),
        R::GetTopic(r) | R::DeleteTopic(r) | R::PurgeTopic(r) | R::GetConsumerGroups(r) => {
            topic(r, None)
        }
        R::UpdateTopic(r) => topic(&r.topic, None),
        R::CreatePartitions(r) | R::DeletePartitions(r) => topic(&r.topic, None),
        R::DeleteSegments(r) => topic(&r.topic, Some(r.partition_id)),
        R::FlushUnsavedBuffer(r) => topic(&r.topic, Some(r.partition_id)),
        R::GetConsumerGroup(r)
        | R::DeleteConsumerGroup(r)
        | R::JoinConsumerGroup(r)
        | R::LeaveConsumerGroup(r)
        | R::SyncConsumerGroup(r) => topic(&r.topic, None),
        R::CreateConsumerGroup(r) => topic(&r.topic, None),
        R::GetConsumerOffset(r) | R::GetConsumerOffsetRouting(r) => topic(&r.topic, r.partition_id),
        R::StoreConsumerOffset(r) => topic(&r.target.topic, r.target.partition_id),
        R::DeleteConsumerOffset(r) => topic(&r.target.topic, r.target.partition_id),
        _ => return,
    };
    crate::telemetry::record_scope(&tracing::Span::current(), stream, topic, partition);
}

async fn route(call: Call<'_>, request: Request<'_>) -> Reply {
    use Request as R;
    record_scope(&request);
    match request {
        R::Ping => call.ok(&[]),
        R::GetStats => system::stats(&call),
        R::GetClusterMetadata => system::cluster_metadata(&call),
        R::GetMe => system::me(&call),
        R::GetClient(r) => system::client(&call, r.client_id),
        R::GetClients => system::clients(&call),
        R::DescribeOptions(r) => system::describe_options(&call, r.scope),
        R::GetSnapshot(r) => system::snapshot(&call, r.compression, r.types),
        R::AttachConsumerSession(r) => routing::attach(&call, &r),
        R::GetPollRouting(r) => routing::poll_route(&call, &r),
        R::PollMessagesOnPrimary(r) => routing::poll_on_primary(call, r).await,
        R::GetConsumerOffsetRouting(r) => routing::offset_route(&call, &r),
        R::GetStream(r) => streams::get(&call, r.stream_id),
        R::GetStreams => streams::list(&call),
        R::CreateStream(r) => streams::create(call, r).await,
        R::UpdateStream(r) => streams::update(call, r).await,
        R::DeleteStream(r) => streams::delete(call, r.stream_id).await,
        R::PurgeStream(r) => streams::purge(call, r.stream_id).await,
        R::GetTopic(r) => topics::get(&call, &r),
        R::GetTopics(r) => topics::list(&call, r.stream_id),
        R::CreateTopic(r) => topics::create(call, r).await,
        R::UpdateTopic(r) => topics::update(call, r).await,
        R::DeleteTopic(r) => topics::delete(call, r).await,
        R::PurgeTopic(r) => topics::purge(call, r).await,
        R::CreatePartitions(r) => topics::create_partitions(call, r).await,
        R::DeletePartitions(r) => topics::delete_partitions(call, r).await,
        R::DeleteSegments(r) => topics::delete_segments(call, r).await,
        R::GetUser(r) => users::get(&call, r.user_id),
        R::GetUsers => users::list(&call),
        R::CreateUser(r) => users::create(call, r).await,
        R::UpdateUser(r) => users::update(call, r).await,
        R::DeleteUser(r) => users::delete(call, r.user_id).await,
        R::UpdatePermissions(r) => users::update_permissions(call, r).await,
        R::ChangePassword(r) => users::change_password(call, r).await,
        R::GetPersonalAccessTokens => users::list_tokens(&call),
        R::CreatePersonalAccessToken(r) => users::create_token(call, r).await,
        R::DeletePersonalAccessToken(r) => users::delete_token(call, r).await,
        R::GetConsumerGroup(r) => groups::get(&call, &r),
        R::GetConsumerGroups(r) => groups::list(&call, &r),
        R::CreateConsumerGroup(r) => groups::create(call, r).await,
        R::DeleteConsumerGroup(r) => groups::delete(call, r).await,
        R::JoinConsumerGroup(r) => groups::join(call, r).await,
        R::LeaveConsumerGroup(r) => groups::leave(call, r).await,
        R::SyncConsumerGroup(r) => groups::sync(&call, &r),
        // Dispatched with its owned frame before decoding; never routed here.
        R::SendMessages(_) => call.deny(ErrorCode::InvalidCommand),
        R::PollMessages(r) => messages::poll(call, r).await,
        R::FlushUnsavedBuffer(r) => messages::flush(call, r).await,
        R::GetConsumerOffset(r) => messages::get_offset(call, r).await,
        R::StoreConsumerOffset(r) => messages::store_offset(call, r).await,
        R::DeleteConsumerOffset(r) => messages::delete_offset(call, r).await,
        R::Login(_) | R::Logout | R::LegacyLogin => call.deny(ErrorCode::InvalidCommand),
    }
}
