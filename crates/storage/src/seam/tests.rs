use std::path::{Path, PathBuf};

use compio::BufResult;

use super::*;

fn dir() -> PathBuf {
    PathBuf::from("/data/p")
}

async fn fresh_file(storage: &SimStorage, name: &str) -> (PathBuf, sim::SimFile) {
    storage.create_dir_all(&dir()).await.unwrap();
    let path = dir().join(name);
    let file = storage.create(&path).await.unwrap();
    (path, file)
}

#[compio::test]
async fn given_unsynced_write_when_crashing_clean_should_keep_only_synced_bytes() {
    let storage = SimStorage::new();
    let (path, file) = fresh_file(&storage, "a.log").await;
    storage.sync_dir(&dir()).await.unwrap();
    file.write_all_at(b"durable".to_vec(), 0).await.0.unwrap();
    file.sync_data().await.unwrap();
    file.write_all_at(b"-volatile".to_vec(), 7).await.0.unwrap();
    let rebooted = storage.crash(CrashMode::Clean);
    assert_eq!(rebooted.file_bytes(&path).unwrap(), b"durable");
    assert!(
        file.size_bytes().await.is_err(),
        "the crashed handle must stay dead"
    );
}

#[compio::test]
async fn given_unsynced_directory_entry_when_crashing_clean_should_lose_the_file() {
    let storage = SimStorage::new();
    let (path, file) = fresh_file(&storage, "a.log").await;
    file.write_all_at(b"x".to_vec(), 0).await.0.unwrap();
    file.sync_data().await.unwrap();
    let rebooted = storage.crash(CrashMode::Clean);
    assert!(rebooted.file_bytes(&path).is_none());
}

#[compio::test]
async fn given_torn_crash_should_keep_a_prefix_of_the_unsynced_tail() {
    for seed in 0..20 {
        let storage = SimStorage::new();
        let (path, file) = fresh_file(&storage, "a.log").await;
        storage.sync_dir(&dir()).await.unwrap();
        file.write_all_at(b"abc".to_vec(), 0).await.0.unwrap();
        file.sync_data().await.unwrap();
        file.write_all_at(b"defgh".to_vec(), 3).await.0.unwrap();
        let bytes = storage
            .crash(CrashMode::Torn { seed })
            .file_bytes(&path)
            .unwrap();
        assert!(
            bytes.len() >= 3 && b"abcdefgh".starts_with(&bytes),
            "seed {seed}: {bytes:?}"
        );
    }
}

#[compio::test]
async fn given_crash_after_two_syncs_should_fail_every_later_operation() {
    let storage = SimStorage::new();
    storage.set_faults(SimFaults {
        crash_after_syncs: Some(2),
        ..SimFaults::default()
    });
    let (_, file) = fresh_file(&storage, "a.log").await;
    storage.sync_dir(&dir()).await.unwrap();
    file.sync_data().await.unwrap();
    assert!(storage.is_crashed());
    assert!(file.write_all_at(b"x".to_vec(), 0).await.0.is_err());
    assert!(storage.exists(&dir()).await.is_err());
}

#[compio::test]
async fn given_fail_next_sync_should_fail_once_then_succeed() {
    let storage = SimStorage::new();
    let (_, file) = fresh_file(&storage, "a.log").await;
    storage.set_faults(SimFaults {
        fail_next_sync: true,
        ..SimFaults::default()
    });
    assert!(file.sync_data().await.is_err());
    assert!(file.sync_data().await.is_ok());
}

#[compio::test]
async fn given_short_write_should_store_prefix_and_fail() {
    let storage = SimStorage::new();
    let (path, file) = fresh_file(&storage, "a.log").await;
    storage.set_faults(SimFaults {
        short_next_write: Some(2),
        ..SimFaults::default()
    });
    let BufResult(result, _) = file
        .write_vectored_all_at([b"ab".to_vec(), b"cd".to_vec()], 0)
        .await;
    assert!(result.is_err());
    assert_eq!(storage.file_bytes(&path).unwrap(), b"ab");
}

#[compio::test]
async fn given_atomic_write_when_crashing_should_see_old_or_new_content() {
    for seed in 0..20 {
        let storage = SimStorage::new();
        storage.create_dir_all(&dir()).await.unwrap();
        let path = dir().join("state");
        write_atomically(&storage, &path, b"old".to_vec())
            .await
            .unwrap();
        storage.set_faults(SimFaults {
            crash_after_syncs: Some(storage.syncs_done() + 1),
            ..SimFaults::default()
        });
        let _ = write_atomically(&storage, &path, b"new!".to_vec()).await;
        let rebooted = storage.crash(CrashMode::Torn { seed });
        let bytes = read_whole(&rebooted, &path).await.unwrap().unwrap();
        assert!(
            bytes == b"old" || bytes == b"new!",
            "seed {seed}: {bytes:?}"
        );
    }
}

#[compio::test]
async fn given_directory_when_listing_should_return_sorted_child_names() {
    let storage = SimStorage::new();
    fresh_file(&storage, "b").await;
    fresh_file(&storage, "a").await;
    storage
        .create_dir_all(&dir().join("sub/deeper"))
        .await
        .unwrap();
    assert_eq!(storage.read_dir(&dir()).await.unwrap(), ["a", "b", "sub"]);
    storage.remove_dir_all(&dir()).await.unwrap();
    assert!(!storage.exists(Path::new("/data/p/a")).await.unwrap());
}

#[compio::test]
async fn given_real_storage_should_round_trip_vectored_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let storage = RealStorage;
    let path = tmp.path().join("f");
    let file = storage.create(&path).await.unwrap();
    file.write_vectored_all_at(vec![b"hello ".to_vec(), b"world".to_vec()], 0)
        .await
        .0
        .unwrap();
    file.sync_data().await.unwrap();
    assert_eq!(file.size_bytes().await.unwrap(), 11);
    assert_eq!(file.read_exact_at(5, 6).await.unwrap(), b"world");
    assert!(file.read_exact_at(5, 8).await.is_err());
    file.set_len(5).await.unwrap();
    storage.sync_dir(tmp.path()).await.unwrap();
    assert_eq!(
        read_whole(&storage, &path).await.unwrap().unwrap(),
        b"hello"
    );
    assert_eq!(storage.read_dir(tmp.path()).await.unwrap(), ["f"]);
}
