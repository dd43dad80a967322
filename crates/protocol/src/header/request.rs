//! The request header a client sends (command 5, spec 4.3).
//!
//! ```text
//! offset size type  field
//!   0..128    -     common prefix (common.rs); command = 5
//!    128   16 u128  client            random non-zero id of this login
//!    144   16 u128  request_checksum  XXH3-64(body) zero-extended, or 0
//!    160    8 u64   timestamp         0
//!    168    8 u64   request           per-login request number
//!    176    1 u8    operation
//!    177    7 -     operation padding zero
//!    184    8 u64   session           0 before login
//!    192    4 u32   user_id           never trusted
//!    196    4 u32   command code      only when operation = NonReplicated
//!    200   56 -     reserved          zero
//! ```

use super::common::{
    PREFIX_END, Prefix, header_bytes, put_u32, put_u64, put_u128, u32_at, u64_at, u128_at,
};
use super::{Command, HEADER_SIZE, HeaderError, Operation, frame_size_for};
use crate::checksum::xxh3_64;
use crate::codes::CommandCode;

const CLIENT: usize = 128;
const REQUEST_CHECKSUM: usize = 144;
const TIMESTAMP: usize = 160;
const REQUEST: usize = 168;
const OPERATION: usize = 176;
const SESSION: usize = 184;
const USER_ID: usize = 192;
const COMMAND_CODE: usize = 196;
const RESERVED: usize = 200;

const _: () = assert!(CLIENT == PREFIX_END && CLIENT + 16 == REQUEST_CHECKSUM);
const _: () = assert!(REQUEST_CHECKSUM + 16 == TIMESTAMP && TIMESTAMP + 8 == REQUEST);
const _: () = assert!(REQUEST + 8 == OPERATION && OPERATION + 8 == SESSION);
const _: () = assert!(SESSION + 8 == USER_ID && USER_ID + 4 == COMMAND_CODE);
const _: () = assert!(COMMAND_CODE + 4 == RESERVED && RESERVED + 56 == HEADER_SIZE);

/// A decoded request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    pub checksum: u128,
    pub checksum_body: u128,
    pub cluster: u128,
    pub size: u32,
    pub view: u32,
    pub release: u32,
    pub command: Command,
    pub replica: u8,
    pub client: u128,
    pub request_checksum: u128,
    pub timestamp: u64,
    pub request: u64,
    pub operation: Operation,
    pub session: u64,
    pub user_id: u32,
    /// Bytes 196..200: the command code of a NonReplicated request.
    pub command_code: u32,
}

impl RequestHeader {
    /// Decodes the first 256 bytes of `bytes`. Only the command and
    /// operation bytes are checked here; `validate` applies V1..V6.
    pub fn decode(bytes: &[u8]) -> Result<Self, HeaderError> {
        let b = header_bytes(bytes)?;
        let prefix = Prefix::decode(b)?;
        let value = b[OPERATION];
        let operation = Operation::from_u8(value).ok_or(HeaderError::UnknownOperation { value })?;
        Ok(Self {
            checksum: prefix.checksum,
            checksum_body: prefix.checksum_body,
            cluster: prefix.cluster,
            size: prefix.size,
            view: prefix.view,
            release: prefix.release,
            command: prefix.command,
            replica: prefix.replica,
            client: u128_at(b, CLIENT),
            request_checksum: u128_at(b, REQUEST_CHECKSUM),
            timestamp: u64_at(b, TIMESTAMP),
            request: u64_at(b, REQUEST),
            operation,
            session: u64_at(b, SESSION),
            user_id: u32_at(b, USER_ID),
            command_code: u32_at(b, COMMAND_CODE),
        })
    }

    /// Writes all 256 bytes; padding and reserved bytes become zero.
    pub fn write_into(&self, out: &mut [u8; HEADER_SIZE]) {
        self.prefix().write(out);
        put_u128(out, CLIENT, self.client);
        put_u128(out, REQUEST_CHECKSUM, self.request_checksum);
        put_u64(out, TIMESTAMP, self.timestamp);
        put_u64(out, REQUEST, self.request);
        out[OPERATION] = self.operation.as_u8();
        out[OPERATION + 1..SESSION].fill(0);
        put_u64(out, SESSION, self.session);
        put_u32(out, USER_ID, self.user_id);
        put_u32(out, COMMAND_CODE, self.command_code);
        out[RESERVED..].fill(0);
    }

    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut out = [0u8; HEADER_SIZE];
        self.write_into(&mut out);
        out
    }

    fn prefix(&self) -> Prefix {
        Prefix {
            checksum: self.checksum,
            checksum_body: self.checksum_body,
            cluster: self.cluster,
            size: self.size,
            view: self.view,
            release: self.release,
            command: self.command,
            replica: self.replica,
        }
    }

    /// Applies the request rules of spec 4.3 to a frame of `frame_len`
    /// bytes (header included). A failing frame gets no reply; the server
    /// should close the connection.
    pub fn validate(&self, frame_len: usize) -> Result<(), HeaderError> {
        if self.command != Command::Request {
            return Err(HeaderError::UnexpectedCommand {
                expected: Command::Request,
                found: self.command,
            });
        }
        if self.client == 0 {
            return Err(HeaderError::ZeroClient);
        }
        if self.operation == Operation::Reserved {
            return Err(HeaderError::OperationNotAllowed {
                operation: self.operation,
            });
        }
        let (session, request) = (self.session, self.request);
        if self.operation == Operation::Register && (session != 0 || request != 0) {
            return Err(HeaderError::RegisterWithIdentity { session, request });
        }
        let sessionless = matches!(
            self.operation,
            Operation::Register | Operation::NonReplicated
        );
        if !sessionless && (session == 0 || request == 0) {
            return Err(HeaderError::MissingSession {
                operation: self.operation,
                session,
                request,
            });
        }
        if (self.size as usize) < HEADER_SIZE || self.size as usize != frame_len {
            return Err(HeaderError::FrameLength {
                size: self.size,
                actual: frame_len,
            });
        }
        Ok(())
    }

    /// Whether `body` agrees with `request_checksum`. Zero means
    /// "unstamped" and always agrees (spec 5.2); a mismatch is answered
    /// with status 4 (`InvalidFormat`).
    pub fn checksum_matches(&self, body: &[u8]) -> bool {
        self.request_checksum == 0 || self.request_checksum == u128::from(xxh3_64(body))
    }

    /// The length of the body this header announces.
    pub fn body_len(&self) -> usize {
        (self.size as usize).saturating_sub(HEADER_SIZE)
    }

    /// A request header filled in the way SDK 0.11.0 fills it (spec 4.3,
    /// 7.4.1): the operation comes from the command, the body checksum is
    /// stamped for session and metadata operations, and the code travels in
    /// bytes 196..200 only for NonReplicated requests. For tools and tests.
    pub fn for_command(
        code: CommandCode,
        client: u128,
        session: u64,
        request: u64,
        body: &[u8],
    ) -> Self {
        let operation = code.operation();
        let stamped =
            !matches!(operation, Operation::NonReplicated) && !operation.is_partition_write();
        Self {
            checksum: 0,
            checksum_body: 0,
            cluster: 0,
            size: frame_size_for(body.len()),
            view: 0,
            release: 0,
            command: Command::Request,
            replica: 0,
            client,
            request_checksum: if stamped {
                u128::from(xxh3_64(body))
            } else {
                0
            },
            timestamp: 0,
            request,
            operation,
            session,
            user_id: 0,
            command_code: if operation == Operation::NonReplicated {
                code.as_u32()
            } else {
                0
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT_ID: u128 = 0x7160_5f4e_3d2c_1b8a_7f4e_6d5b_4e9c_3a0f;

    fn ping(session: u64) -> RequestHeader {
        RequestHeader::for_command(CommandCode::Ping, CLIENT_ID, session, 1, &[])
    }

    #[test]
    fn given_header_when_encoding_and_decoding_should_round_trip() {
        let header =
            RequestHeader::for_command(CommandCode::CreateStream, CLIENT_ID, 7, 1, &[1, b's']);
        let bytes = header.encode();
        assert_eq!(RequestHeader::decode(&bytes), Ok(header));
        assert_eq!(bytes[176], 128);
        assert_eq!(u32::from_le_bytes(bytes[196..200].try_into().unwrap()), 0);
    }

    #[test]
    fn given_valid_requests_when_validating_should_accept() {
        assert_eq!(ping(0).validate(256), Ok(()));
        assert_eq!(ping(7).validate(256), Ok(()));
        let login =
            RequestHeader::for_command(CommandCode::LoginRegister, CLIENT_ID, 0, 0, &[0; 34]);
        assert_eq!(login.validate(290), Ok(()));
    }

    #[test]
    fn given_each_broken_rule_when_validating_should_name_it() {
        let mut h = ping(7);
        h.command = Command::Reply;
        assert!(matches!(
            h.validate(256),
            Err(HeaderError::UnexpectedCommand { .. })
        ));
        let mut h = ping(7);
        h.client = 0;
        assert_eq!(h.validate(256), Err(HeaderError::ZeroClient));
        let mut h = ping(7);
        h.operation = Operation::Reserved;
        assert!(matches!(
            h.validate(256),
            Err(HeaderError::OperationNotAllowed { .. })
        ));
        let mut h = RequestHeader::for_command(CommandCode::LoginRegister, CLIENT_ID, 0, 0, &[]);
        h.session = 3;
        assert!(matches!(
            h.validate(256),
            Err(HeaderError::RegisterWithIdentity { .. })
        ));
        let h = RequestHeader::for_command(CommandCode::CreateStream, CLIENT_ID, 0, 1, &[]);
        assert!(matches!(
            h.validate(256),
            Err(HeaderError::MissingSession { .. })
        ));
        let h = RequestHeader::for_command(CommandCode::LogoutUser, CLIENT_ID, 5, 0, &[]);
        assert!(matches!(
            h.validate(256),
            Err(HeaderError::MissingSession { .. })
        ));
        assert!(matches!(
            ping(0).validate(257),
            Err(HeaderError::FrameLength { .. })
        ));
    }

    #[test]
    fn given_unknown_operation_byte_when_decoding_should_reject() {
        let mut bytes = ping(0).encode();
        bytes[176] = 99;
        assert_eq!(
            RequestHeader::decode(&bytes),
            Err(HeaderError::UnknownOperation { value: 99 })
        );
        bytes[60] = 30;
        assert_eq!(
            RequestHeader::decode(&bytes),
            Err(HeaderError::UnknownCommand { value: 30 })
        );
        assert_eq!(
            RequestHeader::decode(&bytes[..255]),
            Err(HeaderError::TooShort { len: 255 })
        );
    }

    #[test]
    fn given_stamped_body_when_checking_checksum_should_detect_changes() {
        let body = [1u8, b's'];
        let h = RequestHeader::for_command(CommandCode::CreateStream, CLIENT_ID, 7, 1, &body);
        assert!(h.checksum_matches(&body));
        assert!(!h.checksum_matches(&[1, b't']));
        assert!(ping(7).checksum_matches(b"anything"));
    }

    #[test]
    fn given_our_header_when_cast_by_the_sdk_should_read_the_same_fields() {
        use iggy_binary_protocol::ConsensusHeader;
        let header = RequestHeader::for_command(CommandCode::CreateTopic, CLIENT_ID, 7, 2, b"body");
        let aligned = crate::tests::Aligned(header.encode());
        let sdk: &iggy_binary_protocol::RequestHeader = bytemuck::checked::from_bytes(&aligned.0);
        assert!(sdk.validate().is_ok());
        assert_eq!(sdk.client, CLIENT_ID);
        assert_eq!(sdk.size, 260);
        assert_eq!(sdk.request, 2);
        assert_eq!(sdk.session, 7);
        assert_eq!(sdk.operation as u8, Operation::CreateTopic.as_u8());
        assert_eq!(sdk.request_checksum, u128::from(xxh3_64(b"body")));
    }
}
