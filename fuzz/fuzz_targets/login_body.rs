//! Login (Register) bodies: the version prefix and both credential shapes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::requests::LoginRequest;

fuzz_target!(|body: &[u8]| {
    let _ = LoginRequest::decode(body);
});
