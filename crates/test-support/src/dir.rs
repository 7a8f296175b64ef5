//! Temporary directories no other test or run can share.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A fresh directory made by `mkdtemp(3)` under `$TMPDIR`, named `loadmark-<label>-XXXXXX`:
/// created atomically with a random suffix, so it cannot be shared with a parallel test, a
/// concurrent run in another checkout, or something left by an earlier run. Removed on drop,
/// except when the test is panicking: then it is kept, and its path printed, so the failed
/// test's files (logs, reports) can be read.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        let template = std::env::temp_dir().join(format!("loadmark-{label}-XXXXXX"));
        let template = CString::new(template.as_os_str().as_bytes()).expect("no NUL in a path");
        let raw = template.into_raw();
        // SAFETY: `raw` is a NUL-terminated buffer we own, which mkdtemp rewrites in place.
        let made = unsafe { libc::mkdtemp(raw) };
        // SAFETY: `raw` came from CString::into_raw just above and was not freed.
        let template = unsafe { CString::from_raw(raw) };
        assert!(
            !made.is_null(),
            "mkdtemp {template:?}: {}",
            std::io::Error::last_os_error()
        );
        let path = PathBuf::from(OsStr::from_bytes(template.as_bytes()));
        // mkdtemp makes it 0700; daemons the tests start as root drop to another user for
        // their work (nginx's workers read files as www-data/nobody, munged insists that
        // every directory above its socket be searchable by all), so open it up.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("chmod 755 {}: {e}", path.display()));
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for the failed test: {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_distinct_and_removed() {
        let a = TempDir::new("t");
        let b = TempDir::new("t");
        assert_ne!(a.path(), b.path());
        assert!(a.is_dir() && b.is_dir());
        std::fs::write(a.join("file"), "x").unwrap();
        let path = a.path().to_path_buf();
        drop(a);
        assert!(!path.exists());
    }
}
