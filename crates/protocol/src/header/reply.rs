//! The reply header a server sends (command 8, spec 4.4).
//!
//! ```text
//! offset size type  field
//!   0..128    -     common prefix (common.rs); command = 8, size = 256 + body
//!    128   16 u128  request_checksum  echo of the request
//!    144   16 u128  context           0
//!    160   16 u128  client            echo of the request
//!    176    8 u64   op                log op (or session for reads and login)
//!    184    8 u64   commit            latest committed metadata op
//!    192    8 u64   timestamp         prepare time in µs, or 0
//!    200    8 u64   request           echo of the request
//!    208    1 u8    operation         decides how the SDK reads the body
//!    209    7 -     operation padding zero
//!    216    4 u32   status            0 = ok; else an error code, empty body
//!    220   36 -     reserved          zero
//! ```

use super::common::{
    PREFIX_END, Prefix, header_bytes, put_u32, put_u64, put_u128, u32_at, u64_at, u128_at,
};
use super::{Command, HEADER_SIZE, HeaderError, Operation, RequestHeader};

const REQUEST_CHECKSUM: usize = 128;
const CONTEXT: usize = 144;
const CLIENT: usize = 160;
const OP: usize = 176;
const COMMIT: usize = 184;
const TIMESTAMP: usize = 192;
const REQUEST: usize = 200;
const OPERATION: usize = 208;
const STATUS: usize = 216;
const RESERVED: usize = 220;

const _: () = assert!(REQUEST_CHECKSUM == PREFIX_END && REQUEST_CHECKSUM + 16 == CONTEXT);
const _: () = assert!(CONTEXT + 16 == CLIENT && CLIENT + 16 == OP && OP + 8 == COMMIT);
const _: () =
    assert!(COMMIT + 8 == TIMESTAMP && TIMESTAMP + 8 == REQUEST && REQUEST + 8 == OPERATION);
const _: () =
    assert!(OPERATION + 8 == STATUS && STATUS + 4 == RESERVED && RESERVED + 36 == HEADER_SIZE);

/// A decoded reply header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyHeader {
    pub checksum: u128,
    pub checksum_body: u128,
    pub cluster: u128,
    pub size: u32,
    pub view: u32,
    pub release: u32,
    pub command: Command,
    pub replica: u8,
    pub request_checksum: u128,
    pub context: u128,
    pub client: u128,
    pub op: u64,
    pub commit: u64,
    pub timestamp: u64,
    pub request: u64,
    pub operation: Operation,
    pub status: u32,
}

impl ReplyHeader {
    /// A header answering `request` with an empty body: echoes
    /// `request_checksum`, `client`, `request` and `operation` (spec 4.4,
    /// 6.4); `op`, `commit`, `timestamp` and `status` start at zero.
    pub fn for_request(request: &RequestHeader) -> Self {
        Self {
            checksum: 0,
            checksum_body: 0,
            cluster: 0,
            size: HEADER_SIZE as u32,
            view: 0,
            release: 0,
            command: Command::Reply,
            replica: 0,
            request_checksum: request.request_checksum,
            context: 0,
            client: request.client,
            op: 0,
            commit: 0,
            timestamp: 0,
            request: request.request,
            operation: request.operation,
            status: 0,
        }
    }

    /// Decodes the first 256 bytes of `bytes`; the command must be Reply.
    pub fn decode(bytes: &[u8]) -> Result<Self, HeaderError> {
        let b = header_bytes(bytes)?;
        let prefix = Prefix::decode(b)?;
        if prefix.command != Command::Reply {
            return Err(HeaderError::UnexpectedCommand {
                expected: Command::Reply,
                found: prefix.command,
            });
        }
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
            request_checksum: u128_at(b, REQUEST_CHECKSUM),
            context: u128_at(b, CONTEXT),
            client: u128_at(b, CLIENT),
            op: u64_at(b, OP),
            commit: u64_at(b, COMMIT),
            timestamp: u64_at(b, TIMESTAMP),
            request: u64_at(b, REQUEST),
            operation,
            status: u32_at(b, STATUS),
        })
    }

    /// Writes all 256 bytes; padding and reserved bytes become zero.
    pub fn write_into(&self, out: &mut [u8; HEADER_SIZE]) {
        let prefix = Prefix {
            checksum: self.checksum,
            checksum_body: self.checksum_body,
            cluster: self.cluster,
            size: self.size,
            view: self.view,
            release: self.release,
            command: self.command,
            replica: self.replica,
        };
        prefix.write(out);
        put_u128(out, REQUEST_CHECKSUM, self.request_checksum);
        put_u128(out, CONTEXT, self.context);
        put_u128(out, CLIENT, self.client);
        put_u64(out, OP, self.op);
        put_u64(out, COMMIT, self.commit);
        put_u64(out, TIMESTAMP, self.timestamp);
        put_u64(out, REQUEST, self.request);
        out[OPERATION] = self.operation.as_u8();
        out[OPERATION + 1..STATUS].fill(0);
        put_u32(out, STATUS, self.status);
        out[RESERVED..].fill(0);
    }

    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut out = [0u8; HEADER_SIZE];
        self.write_into(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::CommandCode;

    #[test]
    fn given_request_when_building_reply_header_should_echo_identity() {
        let request = RequestHeader::for_command(CommandCode::CreateStream, 0xabc, 7, 3, b"\x01s");
        let mut reply = ReplyHeader::for_request(&request);
        reply.op = 8;
        reply.commit = 8;
        let bytes = reply.encode();
        let decoded = ReplyHeader::decode(&bytes).unwrap();
        assert_eq!(decoded, reply);
        assert_eq!(decoded.request_checksum, request.request_checksum);
        assert_eq!(decoded.client, 0xabc);
        assert_eq!(decoded.request, 3);
        assert_eq!(bytes[208], 128);
        assert_eq!(&bytes[60..62], &[8, 0]);
    }

    #[test]
    fn given_eviction_bytes_when_decoding_as_reply_should_reject() {
        let mut bytes = [0u8; HEADER_SIZE];
        bytes[60] = 13;
        assert!(matches!(
            ReplyHeader::decode(&bytes),
            Err(HeaderError::UnexpectedCommand { .. })
        ));
    }

    #[test]
    fn given_our_reply_when_cast_by_the_sdk_should_read_the_same_fields() {
        let request =
            RequestHeader::for_command(CommandCode::StoreConsumerOffset, 0x55, 9, 4, b"x");
        let mut reply = ReplyHeader::for_request(&request);
        reply.size = 260;
        reply.status = 4100;
        reply.op = 11;
        reply.commit = 12;
        reply.timestamp = 13;
        let aligned = crate::tests::Aligned(reply.encode());
        let sdk: &iggy_binary_protocol::ReplyHeader = bytemuck::checked::from_bytes(&aligned.0);
        assert_eq!(
            (sdk.size, sdk.status, sdk.op, sdk.commit, sdk.timestamp),
            (260, 4100, 11, 12, 13)
        );
        assert_eq!((sdk.client, sdk.request), (0x55, 4));
        assert_eq!(sdk.operation as u8, 161);
        assert_eq!(sdk.command as u8, 8);
    }
}
