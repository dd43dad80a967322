//! The diagnostics snapshot through the SDK: a ZIP archive with the
//! requested sections.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use harness::sdk::root_client;
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

/// Entry names from the archive's central directory.
fn entry_names(zip: &[u8]) -> Vec<String> {
    let end = &zip[zip.len() - 22..];
    assert_eq!(
        &end[..4],
        &0x0605_4b50u32.to_le_bytes(),
        "ends with an end-of-directory record"
    );
    let count = u16::from_le_bytes([end[10], end[11]]) as usize;
    let mut at = u32::from_le_bytes(end[16..20].try_into().unwrap()) as usize;
    let mut names = Vec::new();
    for _ in 0..count {
        assert_eq!(&zip[at..at + 4], &0x0201_4b50u32.to_le_bytes());
        let name_len = u16::from_le_bytes([zip[at + 28], zip[at + 29]]) as usize;
        names.push(String::from_utf8(zip[at + 46..at + 46 + name_len].to_vec()).unwrap());
        at += 46 + name_len;
    }
    names
}

#[tokio::test]
async fn given_snapshot_request_when_asking_for_sections_should_return_a_zip_with_them() {
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let client = root_client(server.tcp()).await;
    let snapshot = client
        .snapshot(
            SnapshotCompression::Deflated,
            vec![SystemSnapshotType::Test, SystemSnapshotType::ServerConfig],
        )
        .await
        .unwrap();
    assert_eq!(
        entry_names(&snapshot.0),
        vec!["test.txt", "server_config.toml"]
    );
    let all = client
        .snapshot(SnapshotCompression::Stored, vec![SystemSnapshotType::All])
        .await
        .unwrap();
    assert_eq!(entry_names(&all.0).len(), 6);
}
