//! HTTP writes through the client-sessions table (binary protocol §7.4.2),
//! as binary-protocol writes go: a write takes its credential's turn and
//! session (`sessions`), is admitted under that client id, session and
//! request number, runs, and completes at the metadata commit this shard
//! has applied, or is aborted when it failed. HTTP has no request-level
//! retries, so the request checksum is 0 and no reply is cached.
//!
//! A session the bounded table no longer knows (newer registrations evicted
//! it) is renewed once, transparently: the stale session ends and a new one
//! opens under the same turn. Any other refusal is a 503.

use consensus::client_table::Admission;
use consensus::{ClientId, Op, Session};
use hyper::StatusCode;

use super::HttpApp;
use super::api::{self, HttpCall, Reply};
use super::error::ApiError;
use super::router::Route;
use super::sessions::{SessionWrite, Writer};
use crate::node::Node;

/// HTTP writes carry no request checksum (it only guards retries).
const CHECKSUM_NONE: u128 = 0;

/// Runs a write route under the caller's session.
pub async fn run(
    app: &HttpApp,
    writer: &Writer<'_>,
    call: HttpCall<'_>,
    route: Route,
) -> Result<Reply, ApiError> {
    let node = &app.shard.node;
    let write = admitted(app, writer).await?;
    node.clients_table_mut()
        .begin(ClientId(write.bound.client), write.request);
    let executing = Executing {
        node,
        write,
        completed: false,
    };
    let result = api::run(call, route).await;
    if result.is_ok() {
        executing.complete();
    }
    result
}

/// The write's session and request number, once the table admits them.
async fn admitted(app: &HttpApp, writer: &Writer<'_>) -> Result<SessionWrite, ApiError> {
    let node = &app.shard.node;
    let write = app.sessions.ensure(node, writer).await?;
    let write = match admit(node, &write) {
        Admission::Execute => return Ok(write),
        Admission::NoSession | Admission::SessionTooLow => {
            app.sessions.renew(node, writer, write).await?
        }
        other => return Err(not_admitted(&other)),
    };
    // A session registered a moment ago holds the newest commit in the
    // table: nothing evicts it before this admission.
    match admit(node, &write) {
        Admission::Execute => Ok(write),
        other => Err(not_admitted(&other)),
    }
}

fn admit(node: &Node, write: &SessionWrite) -> Admission {
    node.clients_table().admit(
        ClientId(write.bound.client),
        Session(write.bound.session),
        write.request,
        CHECKSUM_NONE,
    )
}

fn not_admitted(admission: &Admission) -> ApiError {
    let what = match admission {
        Admission::Execute => "admitted",
        Admission::Replay(_) | Admission::AlreadyApplied => "an already applied request",
        Admission::InFlight => "another request still executing",
        Admission::NoSession => "no session",
        Admission::SessionTooLow => "an outdated session",
        Admission::Drop => "a request the table refuses",
    };
    let mut error = ApiError::http(
        StatusCode::SERVICE_UNAVAILABLE,
        "session_unavailable",
        format!("the write was not admitted under its session: the client table found {what}"),
    );
    error.retry_after = true;
    error
}

/// An admitted write while it runs. Dropped without `complete` (the write
/// failed, or its client went away mid-request) it aborts, so the session's
/// next write is not refused as still in flight; the turn passes on after.
struct Executing<'a> {
    node: &'a Node,
    write: SessionWrite,
    completed: bool,
}

impl Executing<'_> {
    fn complete(mut self) {
        let commit = Op(self.node.metadata_commit());
        self.node.clients_table_mut().complete(
            ClientId(self.write.bound.client),
            self.write.request,
            CHECKSUM_NONE,
            commit,
            None,
        );
        self.completed = true;
    }
}

impl Drop for Executing<'_> {
    fn drop(&mut self) {
        if !self.completed {
            self.node
                .clients_table_mut()
                .abort(ClientId(self.write.bound.client), self.write.request);
        }
    }
}
