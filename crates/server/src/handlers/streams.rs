//! Streams: get, list, create, update, delete, purge (binary protocol §10.4).

use engine::metadata::OpKind;
use engine::metadata::permissions::Action;
use protocol::ErrorCode;
use protocol::primitives::Identifier;
use protocol::requests::{CreateStream, UpdateStream};
use protocol::responses;

use super::Call;
use super::Reply;
use super::convert::{ident, refuse_options, stream_details, stream_record, stream_totals};
use super::write::{self, CacheReply, no_payload};

/// A missing stream is an empty body (the SDK reads it as `None`).
pub fn get(call: &Call<'_>, stream_id: Identifier<'_>) -> Reply {
    let metadata = call.node().metadata();
    let Some(stream) = metadata.find_stream(&ident(&stream_id)) else {
        return call.ok(&[]);
    };
    if !metadata.is_allowed(call.user(), Action::GetStream { stream: stream.id }) {
        return call.deny(ErrorCode::Unauthorized);
    }
    call.ok(&stream_details(stream, &call.node().ctx.partition_stats))
}

pub fn list(call: &Call<'_>) -> Reply {
    let metadata = call.node().metadata();
    if !metadata.is_allowed(call.user(), Action::ListStreams) {
        return call.deny(ErrorCode::Unauthorized);
    }
    let stats = &call.node().ctx.partition_stats;
    let mut out = Vec::new();
    for stream in metadata.streams() {
        stream_record(stream, stream_totals(stream, stats)).encode(&mut out);
    }
    call.ok(&out)
}

pub async fn create(call: Call<'_>, request: CreateStream<'_>) -> Reply {
    let name = request.name.as_str().to_owned();
    let checked = refuse_options(&request.options);
    let prepare = move |_: &Call<'_>| checked.map(|()| OpKind::CreateStream { name });
    let respond = |state: &engine::metadata::MetadataState,
                   outcome: &engine::metadata::ApplyOutcome| {
        let engine::metadata::ApplyOutcome::StreamCreated { stream } = outcome else {
            return Vec::new();
        };
        let stream = state
            .stream(*stream)
            .expect("a created stream exists on the replica that applied it");
        let mut out = Vec::new();
        responses::encode_stream_details(&mut out, &stream_record(stream, Default::default()), &[]);
        out
    };
    write::execute_with(call, prepare, respond, CacheReply::Yes).await
}

pub async fn update(call: Call<'_>, request: UpdateStream<'_>) -> Reply {
    let kind = OpKind::UpdateStream {
        stream: ident(&request.stream_id),
        name: request.name.as_str().to_owned(),
    };
    let checked = refuse_options(&request.options);
    write::execute_checked(call, checked.map(|()| kind)).await
}

pub async fn delete(call: Call<'_>, stream_id: Identifier<'_>) -> Reply {
    write::execute(
        call,
        OpKind::DeleteStream {
            stream: ident(&stream_id),
        },
        no_payload,
    )
    .await
}

pub async fn purge(call: Call<'_>, stream_id: Identifier<'_>) -> Reply {
    write::execute(
        call,
        OpKind::PurgeStream {
            stream: ident(&stream_id),
        },
        no_payload,
    )
    .await
}
