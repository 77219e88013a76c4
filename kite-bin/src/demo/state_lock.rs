//! One demo per state directory. A demo clears its machines' directory when
//! it starts and its machines' `sshd`s live in it, so a second demo on the
//! same directory would delete a running demo's machines under it (their
//! sessions hang after login). The first demo holds an exclusive lock on
//! `<state dir>/demo.lock` while it runs (released by the kernel however it
//! ends); a second one is refused with a sentence.

use anyhow::Context as _;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

/// The lock's file name inside the state directory.
pub const LOCK_FILE: &str = "demo.lock";

/// Takes the state directory `dir` (made when missing) for this demo; the
/// lock is held until the returned file is dropped.
pub fn take(dir: &Path) -> anyhow::Result<File> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => anyhow::bail!(
            "another kite demo is running with the state directory {}: stop it first, or give this one a directory of its own with --state-dir",
            dir.display()
        ),
        Err(TryLockError::Error(error)) => Err(error).with_context(|| format!("locking {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_of_one_directory_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = take(dir.path()).unwrap();
        let refused = take(dir.path()).unwrap_err().to_string();
        assert!(refused.contains("another kite demo is running"), "{refused}");
        assert!(refused.contains("--state-dir"), "{refused}");
        drop(first);
        assert!(take(dir.path()).is_ok(), "the lock outlived the demo that held it");
    }
}
