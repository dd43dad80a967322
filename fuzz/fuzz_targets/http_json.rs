//! HTTP API JSON bodies that carry wire data: send bodies (base64 payloads,
//! header kinds and lengths, ids, partitioning) and permission blocks.
//! Nothing may panic, and an accepted send body must yield a valid record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::batch::{Verify, validate_record};
use protocol::http_json::{PermissionsJson, decode_send_body};

fuzz_target!(|body: &[u8]| {
    if let Ok(batch) = decode_send_body(body, 1, || 7) {
        assert!(validate_record(&batch.record, Verify::Checksums).is_ok());
    }
    if let Ok(permissions) = serde_json::from_slice::<PermissionsJson>(body) {
        let _ = permissions.into_permissions();
    }
});
