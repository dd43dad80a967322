//! The metadata write path of one request (binary protocol §7.4.2):
//! admission through this shard's client table (retries replay the cached
//! reply and never execute twice), the operation built by the handler, the
//! commit on shard 0, and a result-framed reply built from this shard's
//! replica once it has applied the commit.

use engine::metadata::{ApplyOutcome, MetadataOp, MetadataState, OpKind};
use protocol::ErrorCode;
use protocol::header::EvictionReason;
use protocol::reply::eviction;

use super::Call;
use crate::node::process_stats::now_us;
use crate::session::Reply;
use consensus::client_table::Admission;

/// An empty success payload.
pub fn no_payload(_: &MetadataState, _: &ApplyOutcome) -> Vec<u8> {
    Vec::new()
}

/// Runs a metadata write whose operation is already known.
pub async fn execute<R>(call: Call<'_>, kind: OpKind, respond: R) -> Reply
where
    R: FnOnce(&MetadataState, &ApplyOutcome) -> Vec<u8>,
{
    execute_with(call, move |_| Ok(kind), respond, CacheReply::Yes).await
}

/// Runs a write with an empty success payload whose operation may already
/// have been refused while decoding (e.g. an unsupported option).
pub async fn execute_checked(call: Call<'_>, kind: Result<OpKind, ErrorCode>) -> Reply {
    execute_with(call, move |_| kind, no_payload, CacheReply::Yes).await
}

/// Whether the reply may be replayed verbatim to a retry. A reply carrying a
/// secret shown only once (a new personal access token) may not: its retry
/// is answered with `PersonalAccessTokenAlreadyExists` instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheReply {
    Yes,
    No,
}

/// Runs a metadata write; `prepare` builds the operation after admission
/// (so expensive work such as hashing happens once per request) or refuses
/// it with an error code answered as a result-framed rejection.
pub async fn execute_with<F, R>(call: Call<'_>, prepare: F, respond: R, cache: CacheReply) -> Reply
where
    F: FnOnce(&Call<'_>) -> Result<OpKind, ErrorCode>,
    R: FnOnce(&MetadataState, &ApplyOutcome) -> Vec<u8>,
{
    let header = *call.header;
    let node = &call.session.shard.node;
    let (client, request, checksum) = (header.client, header.request, header.request_checksum);
    match node
        .clients_table()
        .admit(client, header.session, request, checksum)
    {
        Admission::Execute => {}
        Admission::Replay(bytes) => return Reply::frame(bytes),
        Admission::AlreadyApplied => {
            return Reply::frame(call.builder().rejection(ErrorCode::RequestAlreadyApplied));
        }
        Admission::InFlight => {
            return Reply::frame(call.builder().rejection(ErrorCode::TransientNotCommitted));
        }
        Admission::NoSession => {
            return Reply::frame(eviction(call.call_header(), EvictionReason::NoSession));
        }
        Admission::SessionTooLow => {
            return Reply::frame(eviction(call.call_header(), EvictionReason::SessionTooLow));
        }
        Admission::Drop => return Reply::close(),
    }
    node.clients_table_mut().begin(client, request);
    let kind = match prepare(&call) {
        Ok(kind) => kind,
        Err(code) => {
            let reply = call.builder().rejection(code);
            node.clients_table_mut().complete(
                client,
                request,
                checksum,
                node.metadata_commit(),
                Some(reply.clone()),
            );
            return Reply::frame(reply);
        }
    };
    let op = MetadataOp {
        timestamp_us: now_us(),
        actor: call.user(),
        kind,
    };
    let result = node.submit(op).await;
    let builder = call.builder().op(result.commit).commit(result.commit);
    let reply = match &result.outcome {
        Ok(outcome) => builder.success(&respond(&node.metadata(), outcome)),
        Err(e) => builder.rejection(error_code(e.code())),
    };
    let cached = match cache {
        CacheReply::Yes => Some(reply.clone()),
        CacheReply::No => Some(
            call.builder()
                .rejection(ErrorCode::PersonalAccessTokenAlreadyExists),
        ),
    };
    node.clients_table_mut()
        .complete(client, request, checksum, result.commit, cached);
    Reply::frame(reply)
}

/// Maps a numeric code to the wire enum (unknown numbers become Error).
pub fn error_code(code: u32) -> ErrorCode {
    ErrorCode::from_u32(code).unwrap_or(ErrorCode::Error)
}

impl Call<'_> {
    pub fn call_header(&self) -> &protocol::header::RequestHeader {
        self.header
    }
}
