//! Routing a validated request: by its operation and, for NonReplicated,
//! by the command code in bytes 196..200 (spec 4.2, 4.3).

use super::{Operation, RequestHeader};
use crate::codes::CommandCode;

/// What a validated request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A login (codes 40 or 45, decided by the body).
    Register,
    /// A known command.
    Command(CommandCode),
    /// A NonReplicated code the registry does not know: status 3.
    UnknownCode { code: u32 },
    /// An operation clients may not send (64..=68, Reserved): Eviction 4.
    NotClientOperation { operation: Operation },
}

/// Routes a request by its operation and, for NonReplicated, by the code
/// in bytes 196..200.
pub fn route(header: &RequestHeader) -> Route {
    match header.operation {
        Operation::Register => Route::Register,
        Operation::NonReplicated => match CommandCode::from_u32(header.command_code) {
            Some(code) => Route::Command(code),
            None => Route::UnknownCode {
                code: header.command_code,
            },
        },
        operation => match operation.command_code() {
            Some(code) => Route::Command(code),
            None => Route::NotClientOperation { operation },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_headers_when_routing_should_pick_register_code_or_unknown() {
        let client = 1;
        let h = RequestHeader::for_command(CommandCode::LoginRegisterWithPat, client, 0, 0, b"");
        assert_eq!(route(&h), Route::Register);
        let h = RequestHeader::for_command(CommandCode::GetStreams, client, 7, 1, b"");
        assert_eq!(route(&h), Route::Command(CommandCode::GetStreams));
        let h = RequestHeader::for_command(CommandCode::PurgeTopic, client, 7, 1, b"");
        assert_eq!(route(&h), Route::Command(CommandCode::PurgeTopic));
        let mut h = RequestHeader::for_command(CommandCode::Ping, client, 7, 1, b"");
        h.command_code = 999;
        assert_eq!(route(&h), Route::UnknownCode { code: 999 });
        h.operation = Operation::TruncatePartition;
        assert_eq!(
            route(&h),
            Route::NotClientOperation {
                operation: Operation::TruncatePartition
            }
        );
    }
}
