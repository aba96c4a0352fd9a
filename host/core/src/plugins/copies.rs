//! Private copies of plugin libraries, so that nothing done to an installed file can touch
//! the code a running server has mapped.
//!
//! A library is mapped into the process while it is loaded. Copying a new build over the
//! installed file (`cp new.so INSTALL/plugins/lib.so`, as a plain install does) rewrites the
//! mapped pages in place, and the next call into the library jumps into garbage: the server
//! dies with a segfault. So weft never loads an installed file itself: it loads a copy
//! named by a hash of its content (`NAME-HASH.EXT`), written under a temporary name, renamed
//! into place and never written again.
//!
//! The copies of the installation's libraries (`INSTALL/plugins`, or beside the binary in a
//! checkout) are shared by every HOME: they live in a store beside them
//! (`INSTALL/plugins/.loaded`, which `install.sh` fills as it installs, or which the server
//! fills where it may write), so a HOME costs nothing for them. A store the server cannot
//! write and that lacks a copy, or one that others may write, is passed over for the HOME's
//! own `HOME/plugins/.loaded`, where the HOME's own libraries' copies always go. A start
//! removes the HOME's copies no longer used; a server that adds a new build to a store
//! removes that library's older builds there (removing a mapped file leaves the mapping
//! alone, and a server that finds its copy gone makes its own).

use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The folder of the copies: under `HOME/plugins`, and the store beside the installation's
/// libraries.
pub const LOADED: &str = ".loaded";

/// A library's content and its copy's file name.
struct Library {
    bytes: Vec<u8>,
    hex: String,
    stem: String,
    ext: Option<String>,
}

impl Library {
    fn read(original: &Path) -> std::io::Result<Self> {
        let bytes = std::fs::read(original)?;
        let hash = Sha256::digest(&bytes);
        Ok(Library {
            hex: hash.iter().take(8).map(|b| format!("{b:02x}")).collect(),
            stem: original
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("plugin")
                .to_owned(),
            ext: original
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_owned),
            bytes,
        })
    }

    fn name(&self) -> String {
        match &self.ext {
            Some(ext) => format!("{}-{}.{ext}", self.stem, self.hex),
            None => format!("{}-{}", self.stem, self.hex),
        }
    }

    /// Whether `name` is a copy of another build of this library.
    fn is_other_build(&self, name: &str) -> bool {
        let Some(rest) = name.strip_prefix(&format!("{}-", self.stem)) else {
            return false;
        };
        let hex = match &self.ext {
            Some(ext) => rest.strip_suffix(&format!(".{ext}")),
            None => Some(rest),
        };
        hex.is_some_and(|h| {
            h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()) && h != self.hex
        })
    }

    /// The copy in `dir`, written when missing; `true` with it when this call wrote it.
    fn copy_in(&self, dir: &Path) -> std::io::Result<(PathBuf, bool)> {
        let copy = dir.join(self.name());
        if std::fs::metadata(&copy).is_ok_and(|m| m.len() == self.bytes.len() as u64) {
            return Ok((copy, false));
        }
        // Writable by its owner only, whatever the umask: a store others may write is
        // refused.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)?;
        let partial = dir.join(format!(".{}.{}.partial", self.hex, std::process::id()));
        let written = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o444)
                .open(&partial)?;
            f.write_all(&self.bytes)?;
            f.sync_all()?;
            std::fs::rename(&partial, &copy)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        written.map(|()| (copy, true))
    }
}

/// The private copy of `original` in `dir`, made when missing.
///
/// # Errors
///
/// Reading the library, or writing the copy (a full disk, a folder that cannot be written).
pub fn private_copy(original: &Path, dir: &Path) -> std::io::Result<PathBuf> {
    Library::read(original)?.copy_in(dir).map(|(copy, _)| copy)
}

/// The shared copy of `original` in the store `store` (see the module's words), made when
/// missing and the store may be written; a new build there removes the older builds of the
/// same library and copies a killed writer left half written an hour ago.
///
/// # Errors
///
/// Reading the library; a store that others than its owner may write (refused: anyone could
/// put code there); writing the copy.
pub fn shared_copy(original: &Path, store: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(m) = std::fs::metadata(store)
        && m.permissions().mode() & 0o022 != 0
    {
        return Err(std::io::Error::other(format!(
            "{} may be written by others than its owner",
            store.display()
        )));
    }
    let library = Library::read(original)?;
    let (copy, new) = library.copy_in(store)?;
    if new && let Ok(entries) = std::fs::read_dir(store) {
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let abandoned = name.ends_with(".partial")
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t < hour_ago);
            if library.is_other_build(&name) || abandoned {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    Ok(copy)
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
    fn a_store_is_shared_and_keeps_only_the_newest_build_of_each_library() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("dir");
        let installed = dir.path().join("libweft_plugin_x.so");
        let neighbour = dir.path().join("libweft_plugin_x_extra.so");
        std::fs::write(&installed, b"first build").expect("write");
        std::fs::write(&neighbour, b"another library").expect("write");
        let store = dir.path().join(LOADED);
        let a = shared_copy(&installed, &store).expect("copy");
        let other = shared_copy(&neighbour, &store).expect("copy");
        // Found again, not written again (the same inode).
        use std::os::unix::fs::MetadataExt as _;
        let inode = std::fs::metadata(&a).expect("copy").ino();
        assert_eq!(shared_copy(&installed, &store).expect("again"), a);
        assert_eq!(std::fs::metadata(&a).expect("copy").ino(), inode);
        // A new build replaces the old one of the same library only.
        std::fs::write(&installed, b"second build").expect("overwrite");
        let b = shared_copy(&installed, &store).expect("copy");
        assert_ne!(a, b);
        assert!(!a.exists() && b.exists() && other.exists());
        // A store others may write is refused.
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = shared_copy(&installed, &store).expect_err("open to everyone");
        assert!(e.to_string().contains("may be written by others"), "{e}");
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
