//! The data directory (`system.path`): the explicit `--fresh` wipe and the
//! storage format marker.
//!
//! Order at boot: `wipe` (only with `--fresh`), then `prepare`, which either
//! initialises a missing or empty directory (writing the marker) or checks the
//! marker of an existing one. A directory that is not ours, or whose marker
//! names another format, is refused before anything in it changes: `prepare`
//! only reads until it has decided the directory is compatible.
//!
//! Marker file `<system.path>/format`: one line of ASCII, the format identity
//! [`FORMAT_ID`] followed by `\n`. It is written to a temporary file, fsynced
//! and renamed, so it is either absent or whole.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Identity of the on-disk format this build reads and writes.
pub const FORMAT_ID: &str = "IGGY-COMPAT-STORAGE-1";
/// File name of the marker inside the data directory.
pub const MARKER_FILE: &str = "format";
/// Longest marker content we read; anything longer is not a marker of ours.
const MARKER_MAX_BYTES: u64 = 256;

#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error("cannot wipe data directory {path} for --fresh: {source}")]
    Wipe { path: PathBuf, source: io::Error },
    #[error("cannot use data directory {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error(
        "refusing data directory {path}: {found}. This server reads and writes storage format \
         {FORMAT_ID}; nothing was changed. Point system.path (IGGY_SYSTEM_PATH) at another \
         directory, restore the data this directory belongs to, or start with --fresh to \
         delete it"
    )]
    Incompatible { path: PathBuf, found: String },
}

/// What `prepare` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// The directory was missing or empty and now carries a fresh marker.
    Initialised,
    /// An existing directory with our marker.
    Existing,
}

/// Deletes the whole data directory (`--fresh`). A missing directory is fine;
/// a partial deletion is an error.
pub fn wipe(path: &Path) -> Result<bool, DataDirError> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(DataDirError::Wipe {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Initialises a missing or empty data directory, or verifies the marker of
/// an existing one.
pub fn prepare(path: &Path) -> Result<Prepared, DataDirError> {
    let io_err = |source| DataDirError::Io {
        path: path.to_owned(),
        source,
    };
    match fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(path).map_err(io_err)?;
            write_marker(path).map_err(io_err)?;
            return Ok(Prepared::Initialised);
        }
        Err(source) => return Err(io_err(source)),
        Ok(meta) if !meta.is_dir() => {
            return Err(incompatible(path, "it is a file, not a directory"));
        }
        Ok(_) => {}
    }
    let is_empty = fs::read_dir(path).map_err(io_err)?.next().is_none();
    if is_empty {
        write_marker(path).map_err(io_err)?;
        return Ok(Prepared::Initialised);
    }
    check_marker(path)?;
    Ok(Prepared::Existing)
}

fn check_marker(path: &Path) -> Result<(), DataDirError> {
    let marker = path.join(MARKER_FILE);
    let meta = match fs::metadata(&marker) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(incompatible(
                path,
                "it is not empty and has no format marker (not written by this server)",
            ));
        }
        Err(source) => {
            return Err(DataDirError::Io {
                path: marker,
                source,
            });
        }
    };
    if meta.len() > MARKER_MAX_BYTES {
        return Err(incompatible(
            path,
            "its format marker is not one this server knows",
        ));
    }
    let bytes = fs::read(&marker).map_err(|source| DataDirError::Io {
        path: marker.clone(),
        source,
    })?;
    let found = String::from_utf8_lossy(&bytes).trim().to_owned();
    if found == FORMAT_ID {
        Ok(())
    } else {
        Err(incompatible(
            path,
            &format!("its format marker says {found:?}"),
        ))
    }
}

fn incompatible(path: &Path, found: &str) -> DataDirError {
    DataDirError::Incompatible {
        path: path.to_owned(),
        found: found.to_owned(),
    }
}

fn write_marker(dir: &Path) -> io::Result<()> {
    let tmp = dir.join(format!("{MARKER_FILE}.tmp"));
    let mut file = fs::File::create(&tmp)?;
    file.write_all(format!("{FORMAT_ID}\n").as_bytes())?;
    file.sync_all()?;
    fs::rename(&tmp, dir.join(MARKER_FILE))?;
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_missing_dir_when_preparing_should_initialise_with_marker() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        assert_eq!(prepare(&dir).unwrap(), Prepared::Initialised);
        assert_eq!(
            fs::read_to_string(dir.join(MARKER_FILE)).unwrap(),
            format!("{FORMAT_ID}\n")
        );
        assert_eq!(prepare(&dir).unwrap(), Prepared::Existing);
    }

    #[test]
    fn given_empty_dir_when_preparing_should_initialise() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(prepare(root.path()).unwrap(), Prepared::Initialised);
    }

    #[test]
    fn given_foreign_marker_when_preparing_should_refuse_and_change_nothing() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join(MARKER_FILE), "IGGY-DURABLE-SESSIONS-3\n").unwrap();
        fs::write(root.path().join("other"), "x").unwrap();
        let err = prepare(root.path()).unwrap_err().to_string();
        assert!(err.contains("IGGY-DURABLE-SESSIONS-3"), "{err}");
        assert!(err.contains("--fresh"), "{err}");
        let names: Vec<_> = fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn given_unmarked_non_empty_dir_when_preparing_should_refuse() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("streams")).unwrap();
        assert!(matches!(
            prepare(root.path()),
            Err(DataDirError::Incompatible { .. })
        ));
    }

    #[test]
    fn given_existing_dir_when_wiping_should_remove_it_and_missing_is_fine() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        prepare(&dir).unwrap();
        assert!(wipe(&dir).unwrap());
        assert!(!dir.exists());
        assert!(!wipe(&dir).unwrap());
    }
}
