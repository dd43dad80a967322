//! Scenario tests of the state machine. A [`Harness`] applies operations
//! with increasing timestamps as a given actor, and checks after every
//! operation that a rejected one changed nothing.

mod determinism;
mod groups;
mod streams;
mod topics;
mod users;

use super::MetadataState;
use crate::metadata::errors::MetadataError;
use crate::metadata::ids::{ClientId, Ident, UserId};
use crate::metadata::ops::{ApplyOutcome, MetadataOp, OpKind};
use crate::metadata::permissions::Permissions;
use crate::metadata::user::{Transport, UserStatus};

pub(super) struct Harness {
    pub state: MetadataState,
    pub now_us: u64,
}

impl Harness {
    /// A state holding only the root user (ID 0).
    pub fn new() -> Self {
        let mut harness = Self {
            state: MetadataState::new(),
            now_us: 1_000,
        };
        harness.ok(create_user("root", Some(Permissions::root())));
        harness
    }

    pub fn apply_as(&mut self, actor: UserId, kind: OpKind) -> Result<ApplyOutcome, MetadataError> {
        self.now_us += 1;
        let before = self.state.clone();
        let result = self.state.apply(&MetadataOp {
            timestamp_us: self.now_us,
            actor,
            kind,
        });
        if result.is_err() {
            assert_eq!(
                self.state, before,
                "a rejected operation must change nothing"
            );
        }
        result
    }

    pub fn apply(&mut self, kind: OpKind) -> Result<ApplyOutcome, MetadataError> {
        self.apply_as(UserId::ROOT, kind)
    }

    pub fn ok(&mut self, kind: OpKind) -> ApplyOutcome {
        let description = format!("{kind:?}");
        self.apply(kind)
            .unwrap_or_else(|e| panic!("{description} failed: {e}"))
    }

    pub fn code(&mut self, kind: OpKind) -> u32 {
        self.code_as(UserId::ROOT, kind)
    }

    pub fn code_as(&mut self, actor: UserId, kind: OpKind) -> u32 {
        match self.apply_as(actor, kind) {
            Ok(outcome) => panic!("expected an error, got {outcome:?}"),
            Err(error) => error.code(),
        }
    }

    pub fn register(&mut self, client: u128, user: UserId) {
        self.ok(OpKind::RegisterClient {
            client: ClientId(client),
            user,
            transport: Transport::Tcp,
            address: format!("10.0.0.1:{client}"),
            node: None,
        });
    }
}

pub(super) fn id(value: u32) -> Ident {
    Ident::Id(value)
}

pub(super) fn name(value: &str) -> Ident {
    Ident::Name(value.to_owned())
}

pub(super) fn create_stream(stream: &str) -> OpKind {
    OpKind::CreateStream {
        name: stream.to_owned(),
    }
}

pub(super) fn create_topic(stream: Ident, topic: &str, partitions_count: u32) -> OpKind {
    OpKind::CreateTopic {
        stream,
        name: topic.to_owned(),
        partitions_count,
        options: Vec::new(),
    }
}

pub(super) fn create_user(username: &str, permissions: Option<Permissions>) -> OpKind {
    OpKind::CreateUser {
        username: username.to_owned(),
        password_hash: format!("hash-of-{username}"),
        status: UserStatus::Active,
        permissions,
    }
}
