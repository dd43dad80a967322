//! Login = Register (binary protocol §7.3): version gate, credential check,
//! session number, reply. Failures are Eviction frames; the connection stays
//! open so the client may try again.

use engine::metadata::MetadataError;
use protocol::ErrorCode;
use protocol::header::{EvictionReason, RequestHeader};
use protocol::reply::{ReplyBuilder, eviction};
use protocol::requests::{LoginCredentials, LoginRequest, PROTOCOL_VERSION};
use protocol::responses::LoginReply;
use tracing::{debug, info};

use super::{Bound, Reply, Session};
use crate::node::{LoginFailure, SessionOwner};

impl Session {
    pub(super) async fn login(&mut self, header: &RequestHeader, body: &[u8]) -> Reply {
        if let Some(bound) = self.bound {
            // §7.3.9: a Register on a bound connection gets the existing session.
            return self.login_reply(header, bound);
        }
        let request = match LoginRequest::decode(body) {
            Ok(request) => request,
            Err(e) => {
                debug!(peer = %self.peer, "login refused: {e}");
                return Reply::frame(eviction(header, e.eviction_reason()));
            }
        };
        let verified = match request.credentials {
            LoginCredentials::Password { username, password } => {
                self.shard
                    .node
                    .verify_password(username.as_str(), password)
                    .await
            }
            LoginCredentials::Token { token } => self.shard.node.verify_token(token.as_str()).await,
        };
        let user_id = match verified {
            Ok(user_id) => user_id,
            Err(failure) => {
                info!(peer = %self.peer, "login failed: {failure}");
                let reason = match failure {
                    LoginFailure::InvalidCredentials => EvictionReason::InvalidCredentials,
                    LoginFailure::InvalidToken => EvictionReason::InvalidToken,
                    LoginFailure::UserInactive => EvictionReason::UserInactive,
                };
                self.failed_logins += 1;
                let reply = Reply::frame(eviction(header, reason));
                // Every attempt costs an Argon2 verification: a client
                // guessing passwords must pay for a new connection every
                // `tcp.max_failed_logins` tries.
                if self.failed_logins >= self.shard.ctx.limits.max_failed_logins {
                    info!(peer = %self.peer, "closing after {} failed logins", self.failed_logins);
                    return reply.and_close();
                }
                return reply;
            }
        };
        let owner = SessionOwner {
            client: header.client,
            user_id,
            transport: self.transport,
            peer: self.peer,
        };
        let bound = match self
            .shard
            .node
            .register_session(self.connection_id, owner)
            .await
        {
            Ok(bound) => bound,
            // Cluster mode: the Register is not committed yet, or this
            // node cannot reach the leader: retryable, never a verdict on
            // the credentials (the SDK forgets them on 42).
            Err(e @ (MetadataError::NotCommitted | MetadataError::NotPrimary { .. })) => {
                info!(peer = %self.peer, "login not committed, retry: {e}");
                let code =
                    ErrorCode::from_u32(e.code()).unwrap_or(ErrorCode::TransientNotCommitted);
                return Reply::frame(ReplyBuilder::for_request(header).rejection(code));
            }
            Err(MetadataError::Forwarded { code }) if code == 57 || code == 58 => {
                info!(peer = %self.peer, "login not committed by the leader, retry ({code})");
                let code = ErrorCode::from_u32(code).unwrap_or(ErrorCode::TransientNotCommitted);
                return Reply::frame(ReplyBuilder::for_request(header).rejection(code));
            }
            Err(e) => {
                // The user went away between the credential check and the
                // commit of its Register.
                info!(peer = %self.peer, "login failed: {e}");
                return Reply::frame(eviction(header, EvictionReason::InvalidCredentials));
            }
        };
        self.bound = Some(bound);
        debug!(peer = %self.peer, user_id, session = bound.session, "logged in");
        self.login_reply(header, bound)
    }

    fn login_reply(&self, header: &RequestHeader, bound: Bound) -> Reply {
        let mut payload = Vec::with_capacity(32);
        LoginReply {
            user_id: bound.user_id,
            session: bound.session,
            server_protocol_version: PROTOCOL_VERSION,
            server_version: env!("CARGO_PKG_VERSION"),
        }
        .encode(&mut payload);
        let commit = self.shard.node.metadata_commit().max(bound.session);
        Reply::frame(
            ReplyBuilder::for_request(header)
                .op(bound.session)
                .commit(commit)
                .success(&payload),
        )
    }
}
