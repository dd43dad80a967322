//! Pins every error number by hand and cross-checks it with the SDK.

use super::ErrorCode;

/// Written out from spec 12.3, independently of the enum definition.
const PINNED: &[(ErrorCode, u32)] = &[
    (ErrorCode::Error, 1),
    (ErrorCode::InvalidConfiguration, 2),
    (ErrorCode::InvalidCommand, 3),
    (ErrorCode::InvalidFormat, 4),
    (ErrorCode::FeatureUnavailable, 5),
    (ErrorCode::InvalidIdentifier, 6),
    (ErrorCode::InvalidVersion, 7),
    (ErrorCode::Disconnected, 8),
    (ErrorCode::CannotEstablishConnection, 9),
    (ErrorCode::CannotCreateBaseDirectory, 10),
    (ErrorCode::CannotCreateRuntimeDirectory, 11),
    (ErrorCode::CannotRemoveRuntimeDirectory, 12),
    (ErrorCode::CannotCreateStateDirectory, 13),
    (ErrorCode::StateFileNotFound, 14),
    (ErrorCode::StateFileCorrupted, 15),
    (ErrorCode::InvalidStateEntryChecksum, 16),
    (ErrorCode::CannotOpenDatabase, 19),
    (ErrorCode::ResourceNotFound, 20),
    (ErrorCode::CannotCloseWebSocketConnection, 21),
    (ErrorCode::StaleClient, 30),
    (ErrorCode::TcpError, 31),
    (ErrorCode::QuicError, 32),
    (ErrorCode::InvalidServerAddress, 33),
    (ErrorCode::InvalidClientAddress, 34),
    (ErrorCode::InvalidIpAddress, 35),
    (ErrorCode::HttpError, 36),
    (ErrorCode::InvalidApiUrl, 37),
    (ErrorCode::Unauthenticated, 40),
    (ErrorCode::Unauthorized, 41),
    (ErrorCode::InvalidCredentials, 42),
    (ErrorCode::InvalidUsername, 43),
    (ErrorCode::InvalidPassword, 44),
    (ErrorCode::InvalidUserStatus, 45),
    (ErrorCode::UserAlreadyExists, 46),
    (ErrorCode::UserInactive, 47),
    (ErrorCode::CannotDeleteUser, 48),
    (ErrorCode::CannotChangePermissions, 49),
    (ErrorCode::InvalidPersonalAccessTokenName, 50),
    (ErrorCode::PersonalAccessTokenAlreadyExists, 51),
    (ErrorCode::PersonalAccessTokensLimitReached, 52),
    (ErrorCode::InvalidPersonalAccessToken, 53),
    (ErrorCode::PersonalAccessTokenExpired, 54),
    (ErrorCode::UsersLimitReached, 55),
    (ErrorCode::InvalidPersonalAccessTokenExpiry, 56),
    (ErrorCode::TransientNotCommitted, 57),
    (ErrorCode::TransientNotAccepted, 58),
    (ErrorCode::RequestAlreadyApplied, 59),
    (ErrorCode::NotConnected, 61),
    (ErrorCode::ClientShutdown, 63),
    (ErrorCode::InvalidTlsDomain, 64),
    (ErrorCode::InvalidTlsCertificatePath, 65),
    (ErrorCode::InvalidTlsCertificate, 66),
    (ErrorCode::FailedToAddCertificate, 67),
    (ErrorCode::InvalidEncryptionKey, 70),
    (ErrorCode::CannotEncryptData, 71),
    (ErrorCode::CannotDecryptData, 72),
    (ErrorCode::InvalidJwtAlgorithm, 73),
    (ErrorCode::InvalidJwtSecret, 74),
    (ErrorCode::JwtMissing, 75),
    (ErrorCode::CannotGenerateJwt, 76),
    (ErrorCode::AccessTokenMissing, 77),
    (ErrorCode::InvalidAccessToken, 78),
    (ErrorCode::CannotFetchJwks, 79),
    (ErrorCode::InvalidSizeBytes, 80),
    (ErrorCode::InvalidUtf8, 81),
    (ErrorCode::InvalidNumberEncoding, 82),
    (ErrorCode::InvalidBooleanValue, 83),
    (ErrorCode::InvalidNumberValue, 84),
    (ErrorCode::ClientNotFound, 100),
    (ErrorCode::InvalidClientId, 101),
    (ErrorCode::ConnectionClosed, 206),
    (ErrorCode::CannotParseHeaderKind, 209),
    (ErrorCode::HttpResponseError, 300),
    (ErrorCode::InvalidHttpRequest, 301),
    (ErrorCode::InvalidJsonResponse, 302),
    (ErrorCode::InvalidBytesResponse, 303),
    (ErrorCode::EmptyResponse, 304),
    (ErrorCode::CannotCreateEndpoint, 305),
    (ErrorCode::CannotParseUrl, 306),
    (ErrorCode::WebSocketError, 400),
    (ErrorCode::WebSocketConnectionError, 401),
    (ErrorCode::WebSocketCloseError, 402),
    (ErrorCode::WebSocketReceiveError, 403),
    (ErrorCode::WebSocketSendError, 404),
    (ErrorCode::CannotCreateStreamsDirectory, 1000),
    (ErrorCode::CannotCreateStreamDirectory, 1001),
    (ErrorCode::CannotCreateStreamInfo, 1002),
    (ErrorCode::CannotUpdateStreamInfo, 1003),
    (ErrorCode::CannotOpenStreamInfo, 1004),
    (ErrorCode::CannotReadStreamInfo, 1005),
    (ErrorCode::CannotCreateStream, 1006),
    (ErrorCode::CannotDeleteStream, 1007),
    (ErrorCode::CannotDeleteStreamDirectory, 1008),
    (ErrorCode::StreamIdNotFound, 1009),
    (ErrorCode::StreamNameNotFound, 1010),
    (ErrorCode::StreamDirectoryNotFound, 1011),
    (ErrorCode::StreamNameAlreadyExists, 1012),
    (ErrorCode::InvalidStreamName, 1013),
    (ErrorCode::InvalidStreamId, 1014),
    (ErrorCode::CannotReadStreams, 1015),
    (ErrorCode::InvalidTopicSize, 1019),
    (ErrorCode::TooManyStreams, 1020),
    (ErrorCode::CannotCreateTopicsDirectory, 2000),
    (ErrorCode::CannotCreateTopicDirectory, 2001),
    (ErrorCode::CannotCreateTopicInfo, 2002),
    (ErrorCode::CannotUpdateTopicInfo, 2003),
    (ErrorCode::CannotOpenTopicInfo, 2004),
    (ErrorCode::CannotReadTopicInfo, 2005),
    (ErrorCode::CannotCreateTopic, 2006),
    (ErrorCode::CannotDeleteTopic, 2007),
    (ErrorCode::CannotDeleteTopicDirectory, 2008),
    (ErrorCode::CannotPollTopic, 2009),
    (ErrorCode::TopicIdNotFound, 2010),
    (ErrorCode::TopicNameNotFound, 2011),
    (ErrorCode::TopicNameAlreadyExists, 2013),
    (ErrorCode::InvalidTopicName, 2014),
    (ErrorCode::TooManyPartitions, 2015),
    (ErrorCode::InvalidTopicId, 2016),
    (ErrorCode::CannotReadTopics, 2017),
    (ErrorCode::InvalidReplicationFactor, 2018),
    (ErrorCode::InvalidPartitionsCount, 2019),
    (ErrorCode::TopicDirectoryNotFound, 2020),
    (ErrorCode::TooManyTopics, 2021),
    (ErrorCode::CannotCreatePartition, 3000),
    (ErrorCode::CannotCreatePartitionsDirectory, 3001),
    (ErrorCode::CannotCreatePartitionDirectory, 3002),
    (ErrorCode::CannotOpenPartitionLogFile, 3003),
    (ErrorCode::CannotReadPartitions, 3004),
    (ErrorCode::CannotDeletePartition, 3005),
    (ErrorCode::CannotDeletePartitionDirectory, 3006),
    (ErrorCode::PartitionNotFound, 3007),
    (ErrorCode::NoPartitions, 3008),
    (ErrorCode::TopicFull, 3009),
    (ErrorCode::CannotDeleteConsumerOffsetsDirectory, 3010),
    (ErrorCode::CannotDeleteConsumerOffsetFile, 3011),
    (ErrorCode::CannotCreateConsumerOffsetsDirectory, 3012),
    (ErrorCode::PartitionIdSpaceExhausted, 3013),
    (ErrorCode::CannotReadConsumerOffsets, 3020),
    (ErrorCode::ConsumerOffsetNotFound, 3021),
    (ErrorCode::NotResolvedConsumer, 3022),
    (ErrorCode::CannotOpenConsumerOffsetsFile, 3023),
    (ErrorCode::TooManyConsumerOffsets, 3024),
    (ErrorCode::SegmentNotFound, 4000),
    (ErrorCode::SegmentClosed, 4001),
    (ErrorCode::InvalidSegmentSize, 4002),
    (ErrorCode::CannotCreateSegmentLogFile, 4003),
    (ErrorCode::CannotCreateSegmentIndexFile, 4004),
    (ErrorCode::CannotCreateSegmentTimeIndexFile, 4005),
    (ErrorCode::CannotSaveMessagesToSegment, 4006),
    (ErrorCode::CannotSaveIndexToSegment, 4007),
    (ErrorCode::CannotSaveTimeIndexToSegment, 4008),
    (ErrorCode::InvalidMessagesCount, 4009),
    (ErrorCode::CannotAppendMessage, 4010),
    (ErrorCode::CannotReadMessage, 4011),
    (ErrorCode::CannotReadMessageId, 4012),
    (ErrorCode::CannotReadMessageState, 4013),
    (ErrorCode::CannotReadMessageTimestamp, 4014),
    (ErrorCode::CannotReadHeadersLength, 4015),
    (ErrorCode::CannotReadHeadersPayload, 4016),
    (ErrorCode::TooBigUserHeaders, 4017),
    (ErrorCode::InvalidHeaderKey, 4018),
    (ErrorCode::InvalidHeaderValue, 4019),
    (ErrorCode::CannotReadMessageLength, 4020),
    (ErrorCode::CannotReadMessagePayload, 4021),
    (ErrorCode::TooBigMessagePayload, 4022),
    (ErrorCode::TooManyMessages, 4023),
    (ErrorCode::EmptyMessagePayload, 4024),
    (ErrorCode::InvalidMessagePayloadLength, 4025),
    (ErrorCode::CannotReadMessageChecksum, 4026),
    (ErrorCode::InvalidMessageChecksum, 4027),
    (ErrorCode::InvalidKeyValueLength, 4028),
    (ErrorCode::CommandLengthError, 4029),
    (ErrorCode::InvalidSegmentsCount, 4030),
    (ErrorCode::NonZeroOffset, 4031),
    (ErrorCode::NonZeroTimestamp, 4032),
    (ErrorCode::MissingIndex, 4033),
    (ErrorCode::InvalidIndexesByteSize, 4034),
    (ErrorCode::InvalidIndexesCount, 4035),
    (ErrorCode::InvalidMessagesSize, 4036),
    (ErrorCode::TooSmallMessage, 4037),
    (ErrorCode::InvalidMessageTimestampDelta, 4038),
    (ErrorCode::InvalidBatchChecksum, 4039),
    (ErrorCode::InvalidHeaderKind, 4040),
    (ErrorCode::UnsupportedOptionKey, 4041),
    (ErrorCode::InvalidOptionValue, 4042),
    (ErrorCode::OptionsBlockTooLarge, 4043),
    (ErrorCode::CannotSendMessagesDueToClientDisconnection, 4050),
    (ErrorCode::BackgroundSendError, 4051),
    (ErrorCode::BackgroundSendTimeout, 4052),
    (ErrorCode::BackgroundSendBufferFull, 4053),
    (ErrorCode::BackgroundWorkerDisconnected, 4054),
    (ErrorCode::BackgroundSendBufferOverflow, 4055),
    (ErrorCode::ProducerSendFailed, 4056),
    (ErrorCode::ProducerClosed, 4057),
    (ErrorCode::InvalidOffset, 4100),
    (ErrorCode::InvalidReservedField, 4101),
    (ErrorCode::SegmentSizeMismatchAtOpen, 4102),
    (ErrorCode::ConsumerGroupIdNotFound, 5000),
    (ErrorCode::InvalidConsumerGroupId, 5002),
    (ErrorCode::ConsumerGroupNameNotFound, 5003),
    (ErrorCode::ConsumerGroupNameAlreadyExists, 5004),
    (ErrorCode::InvalidConsumerGroupName, 5005),
    (ErrorCode::ConsumerGroupMemberNotFound, 5006),
    (ErrorCode::CannotCreateConsumerGroupInfo, 5007),
    (ErrorCode::CannotDeleteConsumerGroupInfo, 5008),
    (ErrorCode::ConsumerGroupPartitionNotOwned, 5009),
    (ErrorCode::MissingBaseOffsetRetainedMessageBatch, 6000),
    (ErrorCode::MissingLastOffsetDeltaRetainedMessageBatch, 6001),
    (ErrorCode::MissingMaxTimestampRetainedMessageBatch, 6002),
    (ErrorCode::MissingLengthRetainedMessageBatch, 6003),
    (ErrorCode::MissingPayloadRetainedMessageBatch, 6004),
    (ErrorCode::CannotReadBatchBaseOffset, 7000),
    (ErrorCode::CannotReadBatchLength, 7001),
    (ErrorCode::CannotReadLastOffsetDelta, 7002),
    (ErrorCode::CannotReadMaxTimestamp, 7003),
    (ErrorCode::CannotReadBatchPayload, 7004),
    (ErrorCode::InvalidConnectionString, 8000),
    (ErrorCode::SnapshotFileCompletionFailed, 9000),
    (ErrorCode::CannotSerializeResource, 10000),
    (ErrorCode::CannotDeserializeResource, 10001),
    (ErrorCode::CannotReadFile, 10002),
    (ErrorCode::CannotReadFileMetadata, 10003),
    (ErrorCode::CannotSeekFile, 10004),
    (ErrorCode::CannotAppendToFile, 10005),
    (ErrorCode::CannotWriteToFile, 10006),
    (ErrorCode::CannotOverwriteFile, 10007),
    (ErrorCode::CannotDeleteFile, 10008),
    (ErrorCode::CannotSyncFile, 10009),
    (ErrorCode::CannotReadIndexOffset, 10010),
    (ErrorCode::CannotReadIndexPosition, 10011),
    (ErrorCode::CannotReadIndexTimestamp, 10012),
    (ErrorCode::TimestampOutOfRange, 10013),
    (ErrorCode::ShardNotFound, 11000),
    (ErrorCode::ShardCommunicationError, 11001),
    (ErrorCode::CannotBindToSocket, 12000),
    (ErrorCode::TaskTimeout, 12001),
    (ErrorCode::IoError, 13000),
    (ErrorCode::AlreadyAuthenticated, 14000),
    (ErrorCode::InvalidSession, 14001),
    (ErrorCode::IncompatibleProtocolVersion, 14003),
];

#[test]
fn given_pinned_table_when_comparing_should_match_every_variant_exactly() {
    assert_eq!(
        PINNED.len(),
        ErrorCode::ALL.len(),
        "the pin table must cover every variant"
    );
    for (index, &(code, number)) in PINNED.iter().enumerate() {
        assert_eq!(code.as_u32(), number, "{} moved", code.name());
        assert_eq!(ErrorCode::from_u32(number), Some(code));
        assert_eq!(ErrorCode::ALL[index], code, "ALL must stay in table order");
    }
}

#[test]
fn given_all_codes_when_listing_should_be_strictly_ascending_and_unique() {
    for pair in ErrorCode::ALL.windows(2) {
        assert!(
            pair[0].as_u32() < pair[1].as_u32(),
            "{} before {}",
            pair[0],
            pair[1]
        );
    }
}

#[test]
fn given_unknown_numbers_when_converting_should_return_none() {
    for number in [0, 17, 18, 60, 62, 4044, 4058, 14002, u32::MAX] {
        assert_eq!(ErrorCode::from_u32(number), None, "{number}");
    }
}

#[test]
fn given_every_code_when_asking_the_sdk_should_map_to_the_same_number() {
    for &code in ErrorCode::ALL {
        let sdk = iggy_common::IggyError::from_code(code.as_u32());
        assert_eq!(sdk.as_code(), code.as_u32(), "SDK does not know {code}");
        assert_eq!(
            sdk.as_string(),
            snake_case(code.name()),
            "SDK names {code} differently"
        );
    }
}

#[test]
fn given_sdk_number_space_when_scanning_should_hold_no_code_we_lack() {
    for number in 1..=20_000u32 {
        let known_to_sdk = iggy_common::IggyError::from_code(number).as_code() == number;
        assert_eq!(
            known_to_sdk,
            ErrorCode::from_u32(number).is_some(),
            "code {number}"
        );
    }
}

#[test]
fn given_variant_when_naming_should_return_short_name() {
    assert_eq!(ErrorCode::StreamIdNotFound.name(), "StreamIdNotFound");
    assert_eq!(ErrorCode::InvalidCommand.to_string(), "InvalidCommand (3)");
}

fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (index, ch) in name.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if index > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}
