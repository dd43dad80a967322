//! A partition directory whose segment file holds arbitrary bytes, as a
//! crash or a damaged disk could leave it: recovery must either refuse it
//! with an error or open a log whose every record reads back and still
//! validates, and which then accepts an append. Nothing may panic. The
//! first byte picks the options (direct I/O, segment size); the rest is the
//! `.log` file. Runs on the simulated disk, so no file is touched.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use protocol::batch::{Verify, build_record, validate_record};
use storage::seam::{SimStorage, Storage};
use storage::{LogOptions, PartitionLog};

thread_local! {
    static RUNTIME: compio::runtime::Runtime =
        compio::runtime::Runtime::new().expect("a compio runtime");
}

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, segment)) = data.split_first() else {
        return;
    };
    let options = LogOptions {
        direct_io: knobs & 1 != 0,
        direct_sync: knobs & 2 != 0,
        segment_size_bytes: if knobs & 4 != 0 { 4_096 } else { 1 << 20 },
        validate_checksum_on_read: true,
        ..LogOptions::default()
    };
    let segment = segment.to_vec();
    RUNTIME.with(|runtime| runtime.block_on(recover(options, segment)));
});

async fn recover(options: LogOptions, segment: Vec<u8>) {
    let storage = SimStorage::new();
    let dir = Path::new("/p");
    storage.create_dir_all(dir).await.expect("directory");
    let path = dir.join("00000000000000000000.log");
    storage.create(&path).await.expect("file");
    storage.sync_dir(dir).await.expect("directory sync");
    storage.overwrite_durably(&path, segment).expect("segment bytes");
    let Ok((log, _)) = PartitionLog::open(storage, dir, options).await else {
        return;
    };
    let records = log
        .read(0, u32::MAX, u64::MAX)
        .await
        .expect("a recovered log reads back");
    for record in &records {
        let bytes = record.to_record();
        assert!(validate_record(&bytes, Verify::Checksums).is_ok());
    }
    let record = build_record(0, &[(1, &b"after recovery"[..], &b""[..])]);
    let receipt = log.append(record, u64::MAX / 2).expect("append after recovery");
    log.wait_durable(receipt.last_offset).await.expect("durable");
}
