//! `<system.path>/<system.runtime.path>/current_config.toml`: the effective
//! configuration with the addresses actually bound and no secrets.
//!
//! The runtime directory is deleted and recreated on every boot, so a dump
//! from an earlier run never survives. The dump is written to a temporary
//! file, fsynced and renamed over the target, so a reader sees either no
//! file or the whole file.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub const DUMP_FILE: &str = "current_config.toml";

/// Deletes and recreates the runtime directory.
pub fn recreate_dir(dir: &Path) -> io::Result<()> {
    match fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    fs::create_dir_all(dir)
}

/// Writes the dump atomically; returns its path.
pub fn write(dir: &Path, contents: &str) -> io::Result<PathBuf> {
    let target = dir.join(DUMP_FILE);
    let tmp = dir.join(format!("{DUMP_FILE}.tmp"));
    let mut file = fs::File::create(&tmp)?;
    file.write_all(contents.as_bytes())?;
    file.sync_all()?;
    fs::rename(&tmp, &target)?;
    fs::File::open(dir)?.sync_all()?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_old_dump_when_recreating_and_writing_should_replace_it_whole() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("runtime");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("stale"), "x").unwrap();
        recreate_dir(&dir).unwrap();
        assert!(!dir.join("stale").exists());
        let path = write(&dir, "[tcp]\naddress = \"127.0.0.1:1\"\n").unwrap();
        assert_eq!(
            fs::read_to_string(path).unwrap(),
            "[tcp]\naddress = \"127.0.0.1:1\"\n"
        );
        assert!(!dir.join(format!("{DUMP_FILE}.tmp")).exists());
    }
}
