//! Route handlers of the HTTP API. Each takes the authenticated call and
//! answers a `Reply` or an `ApiError`; reads go to this shard's metadata
//! replica, writes through the same commit path and partition owners as the
//! binary protocol.

mod messages;
mod poll_json;
mod streams;
mod system;
mod users;

use bytes::Bytes;
use engine::metadata::{ApplyOutcome, Ident, MetadataOp, OpKind, UserId};
use http_body_util::Full;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use protocol::CommandCode;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use super::router::{Route, query_pairs};
use super::{HttpApp, HttpResponse, with_view};
use crate::handlers::write::error_code;
use crate::node::Node;
use crate::node::process_stats::now_us;

/// One authenticated request as the handlers see it.
pub struct HttpCall<'a> {
    pub app: &'a HttpApp,
    /// `None` only on public routes.
    pub user: Option<UserId>,
    pub query: &'a str,
    pub body: &'a Bytes,
}

impl HttpCall<'_> {
    pub fn node(&self) -> &Node {
        &self.app.shard.node
    }

    /// The caller; public routes never ask.
    pub fn user(&self) -> UserId {
        self.user.unwrap_or(UserId(u32::MAX))
    }

    /// The JSON body as `T`: 400 for bad syntax, 422 for a wrong shape.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        serde_json::from_slice(self.body)
            .map_err(|e| protocol::http_json::BodyError::from(e).into())
    }

    /// One query parameter, parsed; absent gives `None`.
    pub fn param<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, ApiError> {
        let pairs = query_pairs(self.query)
            .ok_or_else(|| ApiError::bad_request("the query string is not valid"))?;
        match pairs.into_iter().find(|(k, _)| k == name) {
            None => Ok(None),
            Some((_, value)) => value
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("invalid query parameter {name}"))),
        }
    }

    /// Commits a metadata operation as the caller and waits until this
    /// shard has applied it.
    pub async fn commit(&self, kind: OpKind) -> Result<ApplyOutcome, ApiError> {
        let op = MetadataOp {
            timestamp_us: now_us(),
            actor: self.user(),
            kind,
        };
        self.node()
            .submit(op)
            .await
            .outcome
            .map_err(|e| ApiError::iggy(error_code(e.code())))
    }
}

impl HttpCall<'_> {
    /// Commits an operation whose success has no body (204).
    pub async fn apply(&self, kind: OpKind) -> Result<Reply, ApiError> {
        self.commit(kind).await?;
        Ok(Reply::no_content())
    }
}

/// A success answer.
pub enum Reply {
    Json(StatusCode, Vec<u8>),
    Empty(StatusCode),
    Text(&'static str),
    /// Prometheus exposition.
    Metrics(String),
    Zip {
        name: String,
        bytes: Vec<u8>,
    },
    /// A produce answer, with its `iggy-durability` header.
    Produced {
        status: StatusCode,
        durability: &'static str,
        body: Vec<u8>,
    },
}

impl Reply {
    pub fn json(value: &impl serde::Serialize) -> Self {
        Reply::Json(
            StatusCode::OK,
            serde_json::to_vec(value).unwrap_or_default(),
        )
    }

    pub fn no_content() -> Self {
        Reply::Empty(StatusCode::NO_CONTENT)
    }

    pub fn into_response(self, view: bool) -> HttpResponse {
        let (status, content_type, body, extra) = match self {
            Reply::Json(status, body) => (status, Some("application/json"), body, None),
            Reply::Empty(status) => (status, None, Vec::new(), None),
            Reply::Text(text) => (StatusCode::OK, Some("text/plain"), text.into(), None),
            Reply::Metrics(text) => (
                StatusCode::OK,
                Some("text/plain; version=0.0.4"),
                text.into_bytes(),
                None,
            ),
            Reply::Zip { name, bytes } => (
                StatusCode::OK,
                Some("application/zip"),
                bytes,
                HeaderValue::from_str(&format!("attachment; filename=\"{name}\""))
                    .ok()
                    .map(|v| (hyper::header::CONTENT_DISPOSITION, v)),
            ),
            Reply::Produced {
                status,
                durability,
                body,
            } => (
                status,
                (!body.is_empty()).then_some("application/json"),
                body,
                Some((
                    hyper::header::HeaderName::from_static("iggy-durability"),
                    HeaderValue::from_static(durability),
                )),
            ),
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        if let Some(content_type) = content_type {
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        }
        if let Some((name, value)) = extra {
            response.headers_mut().insert(name, value);
        }
        if view { with_view(response) } else { response }
    }
}

/// Applies the identifier rule to a path segment.
pub fn ident(text: &str) -> Ident {
    Ident::parse(text)
}

/// A path segment that must be a u32.
pub fn number(text: &str, what: &str) -> Result<u32, ApiError> {
    text.parse()
        .map_err(|_| ApiError::bad_request(format!("{what} must be an unsigned 32-bit integer")))
}

pub async fn run(call: HttpCall<'_>, route: Route) -> Result<Reply, ApiError> {
    use Route as R;
    match route {
        R::Ping => Ok(Reply::Text("pong")),
        R::Stats => system::stats(&call),
        R::Metrics => system::metrics(&call),
        R::ClusterMetadata => system::cluster_metadata(&call),
        R::Clients => system::clients(&call),
        R::Client(id) => system::client(&call, &id),
        R::Options(scope) => system::options(&call, &scope),
        R::Snapshot => system::snapshot(&call),
        R::Login => users::login(&call).await,
        R::RefreshToken => users::refresh(&call),
        R::Logout => Ok(Reply::no_content()),
        R::TokenLogin => users::token_login(&call).await,
        R::Users => users::list(&call),
        R::CreateUser => users::create(&call).await,
        R::User(u) => users::get(&call, &u),
        R::UpdateUser(u) => users::update(&call, &u).await,
        R::DeleteUser(u) => users::delete(&call, &u).await,
        R::ChangePassword(u) => users::change_password(&call, &u).await,
        R::UpdatePermissions(u) => users::update_permissions(&call, &u).await,
        R::Tokens => users::tokens(&call),
        R::CreateToken => users::create_token(&call).await,
        R::DeleteToken(name) => users::delete_token(&call, name).await,
        R::Streams => streams::list(&call),
        R::CreateStream => streams::create(&call).await,
        R::Stream(s) => streams::get(&call, &s),
        R::UpdateStream(s) => streams::update(&call, &s).await,
        R::DeleteStream(s) => streams::delete(&call, &s).await,
        R::PurgeStream(s) => streams::purge(&call, &s).await,
        R::Topics(s) => streams::topics(&call, &s),
        R::CreateTopic(s) => streams::create_topic(&call, &s).await,
        R::Topic(s, t) => streams::topic(&call, &s, &t),
        R::UpdateTopic(s, t) => streams::update_topic(&call, &s, &t).await,
        R::DeleteTopic(s, t) => streams::delete_topic(&call, &s, &t).await,
        R::PurgeTopic(s, t) => streams::purge_topic(&call, &s, &t).await,
        R::CreatePartitions(s, t) => streams::create_partitions(&call, &s, &t).await,
        R::DeletePartitions(s, t) => streams::delete_partitions(&call, &s, &t).await,
        R::DeleteSegments(s, t, p) => streams::delete_segments(&call, &s, &t, &p).await,
        R::Groups(s, t) => streams::groups(&call, &s, &t),
        R::CreateGroup(s, t) => streams::create_group(&call, &s, &t).await,
        R::Group(s, t, g) => streams::group(&call, &s, &t, &g),
        R::DeleteGroup(s, t, g) => streams::delete_group(&call, &s, &t, &g).await,
        R::GroupOffsets(s, t, g) => messages::group_offsets(&call, &s, &t, &g).await,
        R::Segments(s, t, p) => streams::segments(&call, &s, &t, &p).await,
        R::GetOffset(s, t) => messages::get_offset(&call, &s, &t).await,
        R::StoreOffset(s, t) => messages::store_offset(&call, &s, &t).await,
        R::DeleteOffset(s, t, c) => messages::delete_offset(&call, &s, &t, &c).await,
        R::Poll(s, t) => messages::poll(&call, &s, &t).await,
        R::Send(s, t) => messages::send(&call, &s, &t).await,
    }
}

/// The binary command a route performs, as an index into
/// `CommandCode::ALL` (requests are counted per command across transports).
pub fn command_index(route: &Route) -> Option<usize> {
    use CommandCode as C;
    use Route as R;
    let code = match route {
        R::Ping => C::Ping,
        R::Stats => C::GetStats,
        R::ClusterMetadata => C::GetClusterMetadata,
        R::Clients => C::GetClients,
        R::Client(_) => C::GetClient,
        R::Snapshot => C::GetSnapshotFile,
        R::Users => C::GetUsers,
        R::CreateUser => C::CreateUser,
        R::User(_) => C::GetUser,
        R::UpdateUser(_) => C::UpdateUser,
        R::DeleteUser(_) => C::DeleteUser,
        R::ChangePassword(_) => C::ChangePassword,
        R::UpdatePermissions(_) => C::UpdatePermissions,
        R::Tokens => C::GetPersonalAccessTokens,
        R::CreateToken => C::CreatePersonalAccessToken,
        R::DeleteToken(_) => C::DeletePersonalAccessToken,
        R::Streams => C::GetStreams,
        R::CreateStream => C::CreateStream,
        R::Stream(_) => C::GetStream,
        R::UpdateStream(_) => C::UpdateStream,
        R::DeleteStream(_) => C::DeleteStream,
        R::PurgeStream(_) => C::PurgeStream,
        R::Topics(_) => C::GetTopics,
        R::CreateTopic(_) => C::CreateTopic,
        R::Topic(..) => C::GetTopic,
        R::UpdateTopic(..) => C::UpdateTopic,
        R::DeleteTopic(..) => C::DeleteTopic,
        R::PurgeTopic(..) => C::PurgeTopic,
        R::CreatePartitions(..) => C::CreatePartitions,
        R::DeletePartitions(..) => C::DeletePartitions,
        R::DeleteSegments(..) => C::DeleteSegments,
        R::Groups(..) => C::GetConsumerGroups,
        R::CreateGroup(..) => C::CreateConsumerGroup,
        R::Group(..) => C::GetConsumerGroup,
        R::DeleteGroup(..) => C::DeleteConsumerGroup,
        R::GetOffset(..) | R::GroupOffsets(..) => C::GetConsumerOffset,
        R::StoreOffset(..) => C::StoreConsumerOffset,
        R::DeleteOffset(..) => C::DeleteConsumerOffset,
        R::Poll(..) => C::PollMessages,
        R::Send(..) => C::SendMessages,
        R::Login | R::RefreshToken | R::TokenLogin => C::LoginUser,
        R::Logout => C::LogoutUser,
        R::Metrics | R::Options(_) | R::Segments(..) => return None,
    };
    CommandCode::ALL.iter().position(|c| *c == code)
}
