//! The cache of compiled libraries, treated as what it is: code this process will run.
//!
//! Trust model (Unix):
//! - The cache directory must be private: owned by the current user and not writable by
//!   anyone else. Directories anvil creates are `0700`. If the configured directory is
//!   shared (for example a `1777` `$ANVIL_CACHE_DIR`, or one owned by another user), anvil
//!   uses a per-user subdirectory `anvil-<uid>` inside it, which must itself be private.
//! - A library is loaded only if it is a regular file (not a symlink) owned by the current
//!   user and not writable by others, and its SHA-256 equals the digest recorded next to it
//!   when it was compiled. Anything else (a planted, truncated or corrupted file) is
//!   compiled again and replaced.

use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The directory compiled libraries are cached in: `$ANVIL_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/anvil`, else `~/.cache/anvil` (the home directory from `$HOME`, else
/// from the user database), else `<temp dir>/anvil-<uid>`.
///
/// The directory actually used may be a private subdirectory of this one (see the
/// [module documentation](self)).
pub fn cache_dir() -> PathBuf {
    cache_dir_from(|name| std::env::var_os(name))
}

/// [`cache_dir`] for the environment `env`.
pub fn cache_dir_from(env: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let set = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set("ANVIL_CACHE_DIR") {
        return dir;
    }
    if let Some(dir) = set("XDG_CACHE_HOME") {
        return dir.join("anvil");
    }
    if let Some(home) = set("HOME").or_else(home_from_user_database) {
        return home.join(".cache").join("anvil");
    }
    std::env::temp_dir().join(format!("anvil-{}", user_id()))
}

/// The current user's id (0 where there are no user ids).
pub fn user_id() -> u32 {
    #[cfg(unix)]
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe {
        libc::getuid()
    }
    #[cfg(not(unix))]
    0
}

#[cfg(unix)]
fn home_from_user_database() -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buffer = vec![0u8; 16 * 1024];
    // SAFETY: all-zero is a valid `passwd` (null pointers, zero ids).
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: the buffer and entry outlive the call; getpwuid_r writes only into them.
    let rc = unsafe { libc::getpwuid_r(user_id(), &mut entry, buffer.as_mut_ptr().cast(), buffer.len(), &mut found) };
    if rc != 0 || found.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points into `buffer`, NUL-terminated, valid until buffer is dropped.
    let dir = unsafe { CStr::from_ptr(entry.pw_dir) };
    let dir = PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()));
    (!dir.as_os_str().is_empty()).then_some(dir)
}

#[cfg(not(unix))]
fn home_from_user_database() -> Option<PathBuf> {
    None
}

/// The private directory to cache libraries in, under `root` (created if needed).
pub fn private_dir(root: &Path) -> Result<PathBuf> {
    create_private(root)?;
    if is_private(root)? {
        return Ok(root.to_path_buf());
    }
    let own = root.join(format!("anvil-{}", user_id()));
    create_private(&own)?;
    if is_private(&own)? {
        return Ok(own);
    }
    Err(Error::UntrustedCache {
        path: own,
        reason: "it is not a directory owned by you and closed to other users (someone else may have created \
                 it); remove it, or set $ANVIL_CACHE_DIR to a directory of your own"
            .into(),
    })
}

/// Creates `dir` (and missing parents) readable, writable and searchable by its owner only.
fn create_private(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| Error::io("create the JIT cache directory", dir, e))
}

/// True if `dir` (symlinks followed) is a directory owned by the current user and not
/// writable by group or others.
fn is_private(dir: &Path) -> Result<bool> {
    let meta = std::fs::metadata(dir).map_err(|e| Error::io("inspect the JIT cache directory", dir, e))?;
    Ok(meta.is_dir() && owned_and_closed(&meta))
}

#[cfg(unix)]
fn owned_and_closed(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.uid() == user_id() && meta.mode() & 0o022 == 0
}

#[cfg(not(unix))]
fn owned_and_closed(_meta: &std::fs::Metadata) -> bool {
    true
}

/// The digest file recorded next to `library`.
pub fn digest_path(library: &Path) -> PathBuf {
    let mut name = library.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// The SHA-256 of a file, in hex.
pub fn file_digest(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

/// True if `library` may be loaded: a regular file owned by the current user, not writable
/// by others, whose digest matches the one recorded when it was compiled.
pub fn is_trusted(library: &Path) -> bool {
    let trusted_file = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && owned_and_closed(&m));
    let recorded = digest_path(library);
    if !trusted_file(library) || !trusted_file(&recorded) {
        return false;
    }
    match (std::fs::read_to_string(&recorded), file_digest(library)) {
        (Ok(want), Ok(got)) => want.trim() == got,
        _ => false,
    }
}

/// A turn at building one file of the cache: threads and processes that would build the
/// same file (the solver runtime, asked for by every test at once) take turns on a lock file
/// beside it, and those after the first find it built. `flock`: released when dropped, or
/// when its process dies; the lock file is removed then, so that the cache holds only what
/// was built (one arriving just after may build again, which the atomic installs keep
/// correct). Where the file system cannot lock, everyone builds, as before.
pub(crate) struct BuildTurn {
    lock: Option<(std::fs::File, PathBuf)>,
}

impl BuildTurn {
    /// The turn at building `path`, or `None` if `built()` says it is there already, before
    /// the turn or once it comes (another took it first). `waiting` is called if another
    /// holds the turn.
    pub(crate) fn unless_built(path: &Path, built: impl Fn() -> bool, waiting: impl FnOnce()) -> Option<BuildTurn> {
        if built() {
            return None;
        }
        let turn = BuildTurn::take(path, waiting);
        (!built()).then_some(turn)
    }

    /// Waits for the turn at building `path`; `waiting` is called first if another holds it.
    fn take(path: &Path, waiting: impl FnOnce()) -> BuildTurn {
        let mut lock_path = path.as_os_str().to_owned();
        lock_path.push(".lock");
        let lock_path = PathBuf::from(lock_path);
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path);
        let Ok(file) = file else { return BuildTurn { lock: None } };
        BuildTurn { lock: lock(&file, waiting).then_some((file, lock_path)) }
    }
}

impl Drop for BuildTurn {
    fn drop(&mut self) {
        if let Some((_, path)) = &self.lock {
            // Removed while still held: no one can take a turn on it after this.
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(unix)]
fn lock(file: &std::fs::File, waiting: impl FnOnce()) -> bool {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: flock on a descriptor this function's caller keeps open.
    if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return true;
    }
    if std::io::Error::last_os_error().raw_os_error() != Some(libc::EWOULDBLOCK) {
        return false;
    }
    waiting();
    loop {
        // SAFETY: as above.
        if unsafe { libc::flock(fd, libc::LOCK_EX) } == 0 {
            return true;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
}

#[cfg(not(unix))]
fn lock(_file: &std::fs::File, _waiting: impl FnOnce()) -> bool {
    false
}
