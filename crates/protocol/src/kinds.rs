//! The `command` and `operation` bytes of the consensus header (spec 4.1, 4.2).

/// Header byte 60: which kind of consensus frame this is.
///
/// Clients only ever send `Request` and only ever accept `Reply` or
/// `Eviction`; the rest are replica-to-replica frames, listed so that a
/// decoder can name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Command {
    Reserved = 0,
    Ping = 1,
    Pong = 2,
    PingClient = 3,
    PongClient = 4,
    Request = 5,
    Prepare = 6,
    PrepareOk = 7,
    Reply = 8,
    Commit = 9,
    StartViewChange = 10,
    DoViewChange = 11,
    StartView = 12,
    Eviction = 13,
    ReplicaHello = 14,
    ReplicaChallenge = 15,
    ReplicaFinish = 16,
    RequestStartView = 17,
    RequestPrepares = 18,
    RepairPrepare = 19,
    RepairDone = 20,
    RangeEvicted = 21,
    RequestStateTransfer = 22,
    StateTransferTarget = 23,
    RequestStateChunk = 24,
    StateChunk = 25,
    ForwardRegister = 26,
    ForwardRegisterResult = 27,
    ForwardLogout = 28,
    ForwardLogoutResult = 29,
}

impl Command {
    const ALL: [Command; 30] = [
        Self::Reserved,
        Self::Ping,
        Self::Pong,
        Self::PingClient,
        Self::PongClient,
        Self::Request,
        Self::Prepare,
        Self::PrepareOk,
        Self::Reply,
        Self::Commit,
        Self::StartViewChange,
        Self::DoViewChange,
        Self::StartView,
        Self::Eviction,
        Self::ReplicaHello,
        Self::ReplicaChallenge,
        Self::ReplicaFinish,
        Self::RequestStartView,
        Self::RequestPrepares,
        Self::RepairPrepare,
        Self::RepairDone,
        Self::RangeEvicted,
        Self::RequestStateTransfer,
        Self::StateTransferTarget,
        Self::RequestStateChunk,
        Self::StateChunk,
        Self::ForwardRegister,
        Self::ForwardRegisterResult,
        Self::ForwardLogout,
        Self::ForwardLogoutResult,
    ];

    /// The command with this byte; values above 29 are invalid.
    pub fn from_u8(value: u8) -> Option<Self> {
        Self::ALL.get(usize::from(value)).copied()
    }

    pub const fn as_u8(self) -> u8 {
        self as u8
    }
}

/// The operation byte (request offset 176, reply offset 208).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Operation {
    Reserved = 0,
    Register = 1,
    NonReplicated = 2,
    Logout = 3,
    CreateTopicWithAssignments = 64,
    CreatePartitionsWithAssignments = 65,
    RemoveConsumerGroupMember = 66,
    CompleteConsumerGroupRevocation = 67,
    TruncatePartition = 68,
    CreateStream = 128,
    UpdateStream = 129,
    DeleteStream = 130,
    PurgeStream = 131,
    CreateTopic = 132,
    UpdateTopic = 133,
    DeleteTopic = 134,
    PurgeTopic = 135,
    CreatePartitions = 136,
    DeletePartitions = 137,
    DeleteSegments = 138,
    CreateConsumerGroup = 139,
    DeleteConsumerGroup = 140,
    CreateUser = 141,
    UpdateUser = 142,
    DeleteUser = 143,
    ChangePassword = 144,
    UpdatePermissions = 145,
    CreatePersonalAccessToken = 146,
    DeletePersonalAccessToken = 147,
    JoinConsumerGroup = 148,
    LeaveConsumerGroup = 149,
    SendMessages = 160,
    StoreConsumerOffset = 161,
    DeleteConsumerOffset = 162,
}

impl Operation {
    /// Every known operation, in ascending order.
    pub const ALL: [Operation; 34] = [
        Self::Reserved,
        Self::Register,
        Self::NonReplicated,
        Self::Logout,
        Self::CreateTopicWithAssignments,
        Self::CreatePartitionsWithAssignments,
        Self::RemoveConsumerGroupMember,
        Self::CompleteConsumerGroupRevocation,
        Self::TruncatePartition,
        Self::CreateStream,
        Self::UpdateStream,
        Self::DeleteStream,
        Self::PurgeStream,
        Self::CreateTopic,
        Self::UpdateTopic,
        Self::DeleteTopic,
        Self::PurgeTopic,
        Self::CreatePartitions,
        Self::DeletePartitions,
        Self::DeleteSegments,
        Self::CreateConsumerGroup,
        Self::DeleteConsumerGroup,
        Self::CreateUser,
        Self::UpdateUser,
        Self::DeleteUser,
        Self::ChangePassword,
        Self::UpdatePermissions,
        Self::CreatePersonalAccessToken,
        Self::DeletePersonalAccessToken,
        Self::JoinConsumerGroup,
        Self::LeaveConsumerGroup,
        Self::SendMessages,
        Self::StoreConsumerOffset,
        Self::DeleteConsumerOffset,
    ];

    /// The operation with this byte, if it is one of the known values.
    pub fn from_u8(value: u8) -> Option<Self> {
        Self::ALL.iter().copied().find(|op| op.as_u8() == value)
    }

    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// Internal metadata operations (64..=68): never sent by clients, but a
    /// server may answer CreateTopic / CreatePartitions / DeleteSegments
    /// under one of them.
    pub const fn is_internal(self) -> bool {
        matches!(self as u8, 64..=68)
    }

    /// Client metadata writes (128..=149), DeleteSegments included.
    pub const fn is_metadata_write(self) -> bool {
        matches!(self as u8, 128..=149)
    }

    /// Partition writes (160..=162): SendMessages and offset writes.
    pub const fn is_partition_write(self) -> bool {
        matches!(self as u8, 160..=162)
    }

    /// Whether a reply under this operation starts with a result section
    /// (spec 6.2, 6.4): 64..=68, 128..=149 except DeleteSegments (138), and
    /// the two offset writes. Register is decided by body length instead;
    /// see [`reply_is_result_framed`].
    pub const fn is_result_framed(self) -> bool {
        match self {
            Self::DeleteSegments => false,
            Self::StoreConsumerOffset | Self::DeleteConsumerOffset => true,
            _ => self.is_internal() || self.is_metadata_write(),
        }
    }

    /// Operations a client may put in a request header.
    pub const fn is_client_allowed(self) -> bool {
        !matches!(self, Self::Reserved) && !self.is_internal()
    }
}

/// How the SDK reads a reply body: result-framed operations, plus Register
/// when the body is non-empty (spec 6.3).
pub const fn reply_is_result_framed(operation: Operation, body_len: usize) -> bool {
    operation.is_result_framed() || (matches!(operation, Operation::Register) && body_len > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_every_byte_when_decoding_operation_should_round_trip_known_values_only() {
        let mut known = 0;
        for value in 0..=u8::MAX {
            if let Some(op) = Operation::from_u8(value) {
                assert_eq!(op.as_u8(), value);
                known += 1;
            }
        }
        assert_eq!(known, Operation::ALL.len());
    }

    #[test]
    fn given_every_byte_when_decoding_command_should_accept_up_to_29() {
        for value in 0..=u8::MAX {
            match Command::from_u8(value) {
                Some(command) => assert_eq!(command.as_u8(), value),
                None => assert!(value > 29),
            }
        }
    }

    #[test]
    fn given_spec_table_when_classifying_should_match_result_framing() {
        let framed: Vec<u8> = Operation::ALL
            .iter()
            .filter(|op| op.is_result_framed())
            .map(|op| op.as_u8())
            .collect();
        let mut expected: Vec<u8> = (64..=68).chain(128..=149).filter(|&v| v != 138).collect();
        expected.extend([161, 162]);
        assert_eq!(framed, expected);
        assert!(!reply_is_result_framed(Operation::Register, 0));
        assert!(reply_is_result_framed(Operation::Register, 4));
        assert!(!reply_is_result_framed(Operation::SendMessages, 4));
    }

    #[test]
    fn given_sdk_operation_table_when_comparing_should_agree_on_framing() {
        use iggy_binary_protocol::Operation as Sdk;
        for op in Operation::ALL {
            assert!(Sdk::is_known_code(op.as_u8()));
            let sdk: Sdk = bytemuck::checked::cast(op.as_u8());
            assert_eq!(sdk.is_result_framed(), op.is_result_framed(), "{op:?}");
        }
        for value in 0..=u8::MAX {
            assert_eq!(
                Sdk::is_known_code(value),
                Operation::from_u8(value).is_some()
            );
        }
    }
}
