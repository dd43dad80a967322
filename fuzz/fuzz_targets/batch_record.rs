//! Batch records as a producer or a damaged segment could present them:
//! validation, slicing and (for valid records) stamping. Nothing may panic,
//! and a record that validates must still validate after stamping.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::batch::{Verify, slice_record, stamp_record, validate_record};

fuzz_target!(|data: &[u8]| {
    let _ = slice_record(data, 3, 5);
    if validate_record(data, Verify::Checksums).is_ok() {
        let mut record = data.to_vec();
        stamp_record(&mut record, 1, 100, 200);
        assert!(validate_record(&record, Verify::Checksums).is_ok());
    }
});
