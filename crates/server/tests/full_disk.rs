//! A full disk, for real: the data directory is a small tmpfs. Producing
//! until it fills gets a clear error (4006) while reads keep working; a
//! metadata write waits for space instead of failing; nothing acknowledged
//! is lost or corrupted; once space is freed writing resumes, and everything
//! survives a restart.
//!
//! Mounting needs CAP_SYS_ADMIN (root, as on the CI machines). Where it is
//! not available the test says so and stops; the same stall-and-resume
//! logic is covered without privileges by the storage crate's simulated
//! ENOSPC test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use harness::sdk::{id, name, read_back, root_client};
use harness::{ServerOptions, TestServer, Workdir};
use iggy::prelude::*;

const TMPFS_SIZE: &str = "48m";
const PAYLOAD: usize = 10_000;

/// Unmounts on drop (also when the test fails).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path) -> Option<Self> {
        std::fs::create_dir_all(dir).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={TMPFS_SIZE}"), "tmpfs"])
            .arg(dir)
            .status()
            .ok()?;
        status.success().then(|| Tmpfs(dir.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn batch(first: u64, count: u64) -> Vec<IggyMessage> {
    (first..first + count)
        .map(|n| {
            let mut payload = format!("{n:08}-").into_bytes();
            payload.resize(PAYLOAD, b'a' + (n % 26) as u8);
            IggyMessage::builder()
                .payload(payload.into())
                .build()
                .unwrap()
        })
        .collect()
}

async fn read_all(client: &IggyClient, expected: u64) {
    let mut offset = 0;
    while offset < expected {
        let polled = client
            .poll_messages(
                &name("s"),
                &name("t"),
                Some(0),
                &Consumer::new(id(1)),
                &PollingStrategy::offset(offset),
                500,
                false,
            )
            .await
            .unwrap();
        assert!(!polled.messages.is_empty(), "offset {offset} is readable");
        for m in &polled.messages {
            assert_eq!(m.header.offset, offset);
            let mut want = format!("{offset:08}-").into_bytes();
            want.resize(PAYLOAD, b'a' + (offset % 26) as u8);
            assert_eq!(m.payload.as_ref(), &want[..], "message {offset} intact");
            offset += 1;
        }
    }
    assert_eq!(offset, expected);
}

/// Whether a message is readable at `offset` of partition 0 of `s/t`.
async fn written_at(client: &IggyClient, offset: u64) -> bool {
    !read_back(client, "s", "t", 0, PollingStrategy::offset(offset), 1)
        .await
        .messages
        .is_empty()
}

/// Sends messages `first..first + 10` to partition 0 of `s/t`.
async fn send_ten(client: &IggyClient, first: u64) -> Result<(), IggyError> {
    let mut messages = batch(first, 10);
    client
        .send_messages(
            &name("s"),
            &name("t"),
            &Partitioning::partition_id(0),
            &mut messages,
        )
        .await
        .map(|_| ())
}

#[tokio::test]
async fn a_full_disk_refuses_writes_keeps_reads_and_resumes_when_freed() {
    let workdir = Workdir::new();
    let Some(_tmpfs) = Tmpfs::mount(&workdir.data()) else {
        harness::skip("cannot mount a tmpfs here (needs CAP_SYS_ADMIN)");
        return;
    };
    let options = ServerOptions::default().env("IGGY_SYSTEM_LOGGING_FILE_ENABLED", "false");
    let server = TestServer::start(&workdir, &options);
    let client = root_client(server.tcp()).await;
    client.create_stream("s").await.unwrap();
    client
        .create_topic(&name("s"), "t", &TopicCreateOptions::default())
        .await
        .unwrap();
    let filler = workdir.data().join("filler");
    // Leave a few megabytes for messages.
    let free = fs_free_bytes(&workdir.data());
    std::fs::write(&filler, vec![0u8; (free as usize).saturating_sub(6 << 20)]).unwrap();

    let mut acknowledged = 0u64;
    let refusal = loop {
        match send_ten(&client, acknowledged).await {
            Ok(_) => acknowledged += 10,
            Err(e) => break e,
        }
        assert!(acknowledged < 100_000, "the disk never filled");
    };
    assert_eq!(refusal.as_code(), 4006, "{refusal}");
    assert!(acknowledged > 0);
    // The refused batch was appended before its write found the disk full:
    // it is kept and written once space returns (at-least-once for a
    // refused send, never a loss of an acknowledged one). Polls show it
    // only once it is written.
    let mut refused_pending = true;
    read_all(&client, acknowledged).await;

    // Top the disk off completely: a metadata write now waits for space
    // instead of failing or stopping the server.
    let rest = workdir.data().join("rest");
    let _ = std::fs::write(&rest, vec![0u8; fs_free_bytes(&workdir.data()) as usize]);
    let admin = root_client(server.tcp()).await;
    // Enough operations to outgrow the journal's last page.
    let create = tokio::spawn(async move {
        for i in 0..200 {
            admin.create_stream(&format!("while-full-{i}")).await?;
        }
        Ok::<_, IggyError>(())
    });
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(!create.is_finished(), "metadata writes wait for space");
    let _ = std::fs::remove_file(&rest);
    std::fs::remove_file(&filler).unwrap();
    create
        .await
        .unwrap()
        .expect("the streams are created once space is freed");
    assert_eq!(client.get_streams().await.unwrap().len(), 201);

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if refused_pending && written_at(&client, acknowledged).await {
            acknowledged += 10;
            refused_pending = false;
        }
        match send_ten(&client, acknowledged).await {
            Ok(_) => {
                acknowledged += 10;
                break;
            }
            Err(e) => {
                assert_eq!(e.as_code(), 4006, "{e}");
                assert!(Instant::now() < deadline, "writing did not resume");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    for _ in 0..10 {
        send_ten(&client, acknowledged).await.unwrap();
        acknowledged += 10;
    }
    read_all(&client, acknowledged).await;

    drop(client);
    let (status, _) = server.stop();
    assert!(status.success());
    let server = TestServer::start(&workdir, &options);
    let client = root_client(server.tcp()).await;
    read_all(&client, acknowledged).await;
}

fn fs_free_bytes(path: &Path) -> u64 {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) }, 0);
    stat.f_bavail as u64 * stat.f_frsize as u64
}
