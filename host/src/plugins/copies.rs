//! Private copies of plugin libraries, so that nothing done to an installed file can touch
//! the code a running server has mapped.
//!
//! A library is mapped into the process while it is loaded. Copying a new build over the
//! installed file (`cp new.so HOME/plugins/lib.so`, as a plain install does) rewrites the
//! mapped pages in place, and the next call into the library jumps into garbage: the server
//! dies with a segfault. So weft never loads an installed file itself: it copies each one to
//! `HOME/plugins/.loaded/NAME-HASH.EXT`, named by a hash of its content, and loads the copy.
//! A copy is written under a temporary name and renamed into place, and never written again;
//! a later start with changed files makes new copies and removes the ones no longer used
//! (removing a mapped file leaves the mapping alone).

use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The folder of the private copies under `HOME/plugins`.
pub const LOADED: &str = ".loaded";

/// The private copy of `original` in `dir`, made when missing.
///
/// # Errors
///
/// Reading the library, or writing the copy (a full disk, a folder that cannot be written).
pub fn private_copy(original: &Path, dir: &Path) -> std::io::Result<PathBuf> {
    let bytes = std::fs::read(original)?;
    let hash = Sha256::digest(&bytes);
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let stem = original
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin");
    let name = match original.extension().and_then(|e| e.to_str()) {
        Some(ext) => format!("{stem}-{hex}.{ext}"),
        None => format!("{stem}-{hex}"),
    };
    let copy = dir.join(name);
    if std::fs::metadata(&copy).is_ok_and(|m| m.len() == bytes.len() as u64) {
        return Ok(copy);
    }
    std::fs::create_dir_all(dir)?;
    let partial = dir.join(format!(".{}.{}.partial", hex, std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&partial)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&partial, &copy)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written.map(|()| copy)
}

/// Removes the copies in `dir` other than `keep` (from earlier starts, or partial ones a
/// killed process left). A copy another process still has loaded stays mapped there.
pub fn remove_stale(dir: &Path, keep: &[PathBuf]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_file() && !keep.contains(&path) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_named_by_content_and_made_once() {
        let dir = tempfile::tempdir().expect("dir");
        let installed = dir.path().join("libweft_plugin_x.so");
        std::fs::write(&installed, b"first build").expect("write");
        let loaded = dir.path().join(LOADED);
        let a = private_copy(&installed, &loaded).expect("copy");
        assert_eq!(std::fs::read(&a).expect("read"), b"first build");
        assert!(
            a.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libweft_plugin_x-") && n.ends_with(".so")),
            "{}",
            a.display()
        );
        assert_eq!(private_copy(&installed, &loaded).expect("again"), a);
        // A new build over the installed file: a new copy; the first stays as it was.
        std::fs::write(&installed, b"second build").expect("overwrite");
        let b = private_copy(&installed, &loaded).expect("copy");
        assert_ne!(a, b);
        assert_eq!(std::fs::read(&a).expect("read"), b"first build");
        remove_stale(&loaded, std::slice::from_ref(&b));
        assert!(!a.exists() && b.exists());
    }

    #[test]
    fn a_folder_that_cannot_be_written_is_an_error_and_leaves_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let installed = dir.path().join("lib.so");
        std::fs::write(&installed, b"x").expect("write");
        // A file where the folder should be.
        let blocked = dir.path().join("blocked");
        std::fs::write(&blocked, b"").expect("write");
        assert!(private_copy(&installed, &blocked.join(LOADED)).is_err());
        assert!(private_copy(&dir.path().join("missing.so"), dir.path()).is_err());
    }
}
