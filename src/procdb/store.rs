// SPDX-License-Identifier: GPL-2.0-only
//! Where the database lives and how it reaches the disk safely.
//!
//! The daemon runs as root, so every file operation here assumes someone may have planted a
//! symlink or a FIFO where the database should be:
//! - reads open with `O_NOFOLLOW | O_NONBLOCK` and accept only a regular file;
//! - writes go to a fresh temp file in the same directory, created `O_CREAT | O_EXCL |
//!   O_NOFOLLOW` with mode 0600 (an existing name, link or not, is never opened), then fsync,
//!   rename over the final name, fsync the directory: a reader sees the old file or the new one,
//!   never a torn one, and a crash leaves at most a stray temp file;
//! - the final name is never replaced if it is a symlink or anything but a regular file.
//!
//! Only the last path component is protected: the directories above it are the cache directory
//! of the user the daemon runs as (root's own, see [`default_path`]), which nobody else can
//! modify.

use std::ffi::{CStr, OsStr, OsString};
use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::format::{self, Corruption, HEADER_LEN, MAX_PAYLOAD, PersistedEntry};

const DIR_NAME: &str = "pandemonium";
const FILE_NAME: &str = "procdb.bin";

/// What loading found. Every case yields a usable (possibly empty) database; only `Loaded` and
/// `Missing` are silent.
#[derive(Debug)]
pub enum LoadOutcome {
    /// No file yet: an empty database.
    Missing,
    /// `dropped` entries beyond the capacity were discarded, oldest first.
    Loaded { entries: usize, dropped: usize },
    /// The file was damaged. It was renamed to `set_aside` (`Ok`) with its bytes intact, or
    /// could not be moved and was left where it was (`Err`).
    Corrupt {
        problem: Corruption,
        set_aside: io::Result<PathBuf>,
    },
    /// The path could not be read at all (a symlink, not a regular file, permissions, a
    /// non-directory in the path). Nothing was touched.
    Unreadable(io::Error),
}

impl LoadOutcome {
    /// True for the outcomes the caller should log as a warning.
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            LoadOutcome::Corrupt { .. } | LoadOutcome::Unreadable(_)
        )
    }
}

impl fmt::Display for LoadOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadOutcome::Missing => write!(f, "no procdb yet; starting empty"),
            LoadOutcome::Loaded { entries, dropped } => {
                write!(f, "loaded {entries} profiles")?;
                if *dropped > 0 {
                    write!(f, " ({dropped} oldest dropped over capacity)")?;
                }
                Ok(())
            }
            LoadOutcome::Corrupt {
                problem,
                set_aside: Ok(p),
            } => write!(
                f,
                "procdb {problem}; moved it to {} and starting empty",
                p.display()
            ),
            LoadOutcome::Corrupt {
                problem,
                set_aside: Err(e),
            } => write!(
                f,
                "procdb {problem}; could not move it aside ({e}); starting empty"
            ),
            LoadOutcome::Unreadable(e) => write!(f, "procdb unreadable ({e}); starting empty"),
        }
    }
}

/// Reads and decodes `path`. Damaged files are set aside as `<name>.corrupt-<unix-seconds>`.
pub(super) fn read(path: &Path) -> (Vec<PersistedEntry>, LoadOutcome) {
    let (bytes, id) = match read_regular(path) {
        Ok(v) => v,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (vec![], LoadOutcome::Missing),
        Err(e) => return (vec![], LoadOutcome::Unreadable(e)),
    };
    match format::decode(&bytes) {
        Ok(entries) => {
            let n = entries.len();
            (
                entries,
                LoadOutcome::Loaded {
                    entries: n,
                    dropped: 0,
                },
            )
        }
        Err(problem) => (
            vec![],
            LoadOutcome::Corrupt {
                problem,
                set_aside: set_aside(path, id),
            },
        ),
    }
}

/// Device and inode of the file that was read, so the set-aside renames that file and not one a
/// concurrent save put in its place.
type FileId = (u64, u64);

fn read_regular(path: &Path) -> io::Result<(Vec<u8>, FileId)> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                io::Error::other(format!(
                    "{} is a symlink; refusing to follow it",
                    path.display()
                ))
            } else {
                e
            }
        })?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    // One byte past the largest valid file is enough for decode() to call it too large.
    let limit = HEADER_LEN as u64 + MAX_PAYLOAD + 1;
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize);
    f.take(limit).read_to_end(&mut bytes)?;
    Ok((bytes, (meta.dev(), meta.ino())))
}

fn set_aside(path: &Path, id: FileId) -> io::Result<PathBuf> {
    let now = fs::symlink_metadata(path)?;
    if (now.dev(), now.ino()) != id {
        return Err(io::Error::other(
            "the file was replaced while it was being read; left alone",
        ));
    }
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut base = path.as_os_str().to_owned();
    base.push(format!(".corrupt-{ts}"));
    for n in 0..1000u32 {
        let mut name = base.clone();
        if n > 0 {
            name.push(format!("-{n}"));
        }
        let aside = PathBuf::from(name);
        match fs::symlink_metadata(&aside) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::rename(path, &aside)?;
                sync_dir(parent_of(path));
                return Ok(aside);
            }
            _ => continue,
        }
    }
    Err(io::Error::other("no free name to set the file aside"))
}

/// Atomically replaces `path` with `bytes` (see the module docs for the steps).
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = parent_of(path);
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    refuse_unsafe_target(path)?;
    let (tmp, mut f) = create_temp(path)?;
    let written = f
        .write_all(bytes)
        .and_then(|()| f.sync_all())
        .and_then(|()| refuse_unsafe_target(path))
        .and_then(|()| fs::rename(&tmp, path));
    drop(f);
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    File::open(dir)?.sync_all()
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The final name may be absent or a regular file; anything else is somebody else's.
fn refuse_unsafe_target(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(io::Error::other(format!(
            "{} is a symlink; refusing to replace it",
            path.display()
        ))),
        Ok(m) if !m.is_file() => Err(io::Error::other(format!(
            "{} is not a regular file; refusing to replace it",
            path.display()
        ))),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates `.<name>.tmp-<pid>-<n>` next to `path`. The counter makes names unique within the
/// process; a name that exists (a leftover, or something planted) is skipped, never opened.
fn create_temp(path: &Path) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().unwrap_or(OsStr::new(FILE_NAME));
    let mut last = None;
    for _ in 0..64 {
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(
            ".tmp-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let tmp = parent_of(path).join(tmp_name);
        match open_new(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temp name")))
}

fn open_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// The default database path: `<cache>/pandemonium/procdb.bin`.
///
/// For an ordinary user, `<cache>` is `$XDG_CACHE_HOME` if set and absolute, else `$HOME/.cache`.
/// As root (which the scheduler always is, directly, via sudo or as a service) it is the `.cache`
/// of root's home directory from the password database, whatever HOME, XDG_CACHE_HOME or
/// SUDO_USER say. Writing as root into a directory another user owns is exactly the setting in
/// which a planted link redirects a root write; and the profiles describe the machine's workload,
/// not one user's, so `sudo scx_pandemonium`, `sudo -E` and the systemd service should all share
/// one database. `None` only when no home directory can be found.
pub fn default_path() -> Option<PathBuf> {
    // SAFETY: geteuid cannot fail and has no preconditions.
    let euid = unsafe { libc::geteuid() };
    resolve_default_path(
        euid,
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
        || passwd_home(0),
    )
}

fn resolve_default_path(
    euid: u32,
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
    root_home: impl FnOnce() -> Option<PathBuf>,
) -> Option<PathBuf> {
    let cache = if euid == 0 {
        root_home()
            .unwrap_or_else(|| PathBuf::from("/root"))
            .join(".cache")
    } else {
        let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
        match absolute(xdg_cache_home) {
            Some(x) => x,
            None => absolute(home)?.join(".cache"),
        }
    };
    Some(cache.join(DIR_NAME).join(FILE_NAME))
}

fn passwd_home(uid: libc::uid_t) -> Option<PathBuf> {
    let mut buf: Vec<libc::c_char> = vec![0; 1024];
    loop {
        // SAFETY: zeroed passwd is a valid out-parameter; getpwuid_r writes only into `pwd` and
        // `buf` (whose length it is given) and sets `result` to null or to `&pwd`.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result = std::ptr::null_mut();
        let rc =
            unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
        if rc == libc::ERANGE && buf.len() < (1 << 20) {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        // SAFETY: on success pw_dir points to a NUL-terminated string inside `buf`.
        let dir = unsafe { CStr::from_ptr(pwd.pw_dir) };
        let p = PathBuf::from(OsStr::from_bytes(dir.to_bytes()));
        return p.is_absolute().then_some(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_ignores_the_invoking_users_environment() {
        let p = resolve_default_path(
            0,
            Some("/home/alice/.cache".into()),
            Some("/home/alice".into()),
            || Some(PathBuf::from("/root")),
        );
        assert_eq!(
            p,
            Some(PathBuf::from("/root/.cache/pandemonium/procdb.bin"))
        );
        let p = resolve_default_path(0, None, None, || None);
        assert_eq!(
            p,
            Some(PathBuf::from("/root/.cache/pandemonium/procdb.bin"))
        );
    }

    #[test]
    fn users_follow_xdg_then_home() {
        let never = || -> Option<PathBuf> { panic!("root lookup for a user") };
        let p = resolve_default_path(1000, Some("/x/cache".into()), Some("/home/a".into()), never);
        assert_eq!(p, Some(PathBuf::from("/x/cache/pandemonium/procdb.bin")));
        let p = resolve_default_path(1000, Some("rel".into()), Some("/home/a".into()), never);
        assert_eq!(
            p,
            Some(PathBuf::from("/home/a/.cache/pandemonium/procdb.bin"))
        );
        assert_eq!(
            resolve_default_path(1000, None, Some("rel".into()), never),
            None
        );
        assert_eq!(resolve_default_path(1000, None, None, never), None);
    }

    #[test]
    fn root_home_comes_from_the_password_database() {
        let h = passwd_home(0).expect("uid 0 has a passwd entry");
        assert!(h.is_absolute(), "{h:?}");
        assert!(default_path().is_some());
    }

    #[test]
    fn temp_creation_never_opens_an_existing_name() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::write(&outside, b"precious").unwrap();
        let planted = dir.path().join("planted");
        std::os::unix::fs::symlink(&outside, &planted).unwrap();
        let e = open_new(&planted).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        fs::write(dir.path().join("plain"), b"x").unwrap();
        assert!(open_new(&dir.path().join("plain")).is_err());
        assert_eq!(fs::read(&outside).unwrap(), b"precious");
    }

    #[test]
    fn temp_files_are_private_and_leave_nothing_behind() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("procdb.bin");
        write_atomic(&path, b"hello").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"hello");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [OsString::from("procdb.bin")]);
    }
}
