//! A whole request frame: header decode and validation, then the body
//! decoder of the routed command. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::header::{HEADER_SIZE, RequestHeader};
use protocol::requests::Request;
use protocol::{Route, route};

fuzz_target!(|frame: &[u8]| {
    let Ok(header) = RequestHeader::decode(frame) else { return };
    if header.validate(frame.len()).is_err() {
        return;
    }
    let body = &frame[HEADER_SIZE..];
    let _ = header.checksum_matches(body);
    if let Route::Command(code) = route(&header) {
        let _ = Request::decode(code, body);
    }
});
