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
use super::Reply;
use crate::node::process_stats::now_us;
use consensus::client_table::Admission;
use consensus::{ClientId, Op, RequestNumber, Session};

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
    if let Err(answer) = admit(&call) {
        return answer;
    }
    let node = call.node();
    let kind = match prepare(&call) {
        Ok(kind) => kind,
        Err(code) => {
            let reply = call.builder().rejection(code);
            complete(&call, node.metadata_commit(), Some(reply.clone()));
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
    complete(&call, result.commit, cached);
    Reply::frame(reply)
}

/// Admission through the client table (binary protocol §7.4.2), for every
/// write path: `Ok` marks the request executing (finish it with `complete`
/// or `abandon`); `Err` is the answer to send instead (a replayed reply, a
/// rejection or an eviction) and nothing executes.
pub fn admit(call: &Call<'_>) -> Result<(), Reply> {
    let header = call.header;
    let (client, request) = (ClientId(header.client), RequestNumber(header.request));
    let admission = call.node().clients_table().admit(
        client,
        Session(header.session),
        request,
        header.request_checksum,
    );
    match admission {
        Admission::Execute => {
            call.node().clients_table_mut().begin(client, request);
            Ok(())
        }
        Admission::Replay(bytes) => Err(Reply::frame(bytes)),
        Admission::AlreadyApplied => Err(Reply::frame(
            call.builder().rejection(ErrorCode::RequestAlreadyApplied),
        )),
        Admission::InFlight => Err(Reply::frame(
            call.builder().rejection(ErrorCode::TransientNotCommitted),
        )),
        Admission::NoSession => Err(Reply::frame(eviction(
            call.call_header(),
            EvictionReason::NoSession,
        ))),
        Admission::SessionTooLow => Err(Reply::frame(eviction(
            call.call_header(),
            EvictionReason::SessionTooLow,
        ))),
        Admission::Drop => Err(Reply::close()),
    }
}

/// Records an admitted request's committed reply (at metadata op
/// `commit`): a retry of it replays `reply` byte for byte.
pub fn complete(call: &Call<'_>, commit: u64, reply: Option<Vec<u8>>) {
    let header = call.header;
    call.node().clients_table_mut().complete(
        ClientId(header.client),
        RequestNumber(header.request),
        header.request_checksum,
        Op(commit),
        reply,
    );
}

/// Releases an admitted request that changed nothing (refused before it
/// took effect), so a retry may execute it.
pub fn abandon(call: &Call<'_>) {
    let header = call.header;
    call.node()
        .clients_table_mut()
        .abort(ClientId(header.client), RequestNumber(header.request));
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
