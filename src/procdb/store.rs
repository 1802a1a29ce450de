// SPDX-License-Identifier: GPL-2.0-only
//! Where the database lives and how it reaches the disk safely.
//!
//! The daemon runs as root, so every file operation here assumes someone may have planted a
//! symlink or a FIFO where the database should be:
//! - reads open with `O_NOFOLLOW | O_NONBLOCK` and accept only a regular file;
//! - writes go to a fresh temp file in the same directory ([`tempfile::NamedTempFile`]: a random
//!   name created `O_CREAT | O_EXCL`, mode 0600, so an existing name, link or not, is never
//!   opened), then fsync, rename over the final name ([`NamedTempFile::persist`]), fsync the
//!   directory: a reader sees the old file or the new one, never a torn one, and a crash leaves
//!   at most a stray temp file (any other failure removes it);
//! - the final name is never replaced if it is a symlink or anything but a regular file;
//! - an fsync that is refused rather than failed (see [`Durability::Unsynced`]) does not stop
//!   the rename: the complete file is better than the stale one;
//! - a file the database could not load (unreadable, or damaged and not movable aside) is never
//!   replaced ([`Replace::Never`]): it may hold what an earlier run learned, or be somebody's on
//!   purpose, and an empty database learned in one run is worth less than either.
//!
//! Only the last path component is protected: the directories above it are root's state
//! directory (see [`super::default_path`]) or the user's own cache, which nobody else can modify.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};
use tempfile::NamedTempFile;

use super::format::{self, Corruption, HEADER_LEN, MAX_PAYLOAD, PersistedEntry};
use super::paths::FILE_NAME;

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
                "procdb {problem}; could not move it aside ({e}); starting empty, and {KEPT}"
            ),
            LoadOutcome::Unreadable(e) => {
                write!(f, "procdb unreadable ({e}); starting empty, and {KEPT}")
            }
        }
    }
}

/// What the load says, once, about a file it could not use and did not move.
const KEPT: &str = "the file stays as it is: nothing learned in this run is saved over it";

impl LoadOutcome {
    /// True when a file the database did not load may still sit at the path: saves must not
    /// replace it.
    pub fn left_a_file_unloaded(&self) -> bool {
        matches!(
            self,
            LoadOutcome::Unreadable(_)
                | LoadOutcome::Corrupt {
                    set_aside: Err(_),
                    ..
                }
        )
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

pub(super) fn read_regular(path: &Path) -> io::Result<(Vec<u8>, FileId)> {
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

/// Whether a completed write is known to be on the disk.
#[derive(Debug)]
pub enum Durability {
    Synced,
    /// The new file is complete and in place, but an fsync was refused: EPERM from a seccomp
    /// filter (a unit with `SystemCallFilter=~@sync`, as scx_loader's is), EINVAL or ENOSYS from
    /// a file system that cannot sync. The kernel's writeback still writes it within seconds;
    /// only a crash before then loses it, so this is a warning, not a failed save.
    Unsynced(io::Error),
}

/// Whether a write may replace a file already at the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replace {
    /// A regular file there is ours (we loaded it, or nothing was there): replace it.
    Allowed,
    /// Whatever is there is not ours: write only where no name exists, atomically.
    Never,
}

/// Why a [`Replace::Never`] write was refused: a file is at the path. Carried inside the
/// `io::Error` so the caller can tell it from a failure (see [`is_kept`]).
#[derive(Debug)]
struct Kept(PathBuf);

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} could not be loaded at start and is kept; nothing is saved over it",
            self.0.display()
        )
    }
}

impl std::error::Error for Kept {}

fn kept(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, Kept(path.to_path_buf()))
}

/// True for a save refused because the file at the path was never loaded (not a failure: the
/// load already said so).
pub fn is_kept(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Kept>())
}

/// Atomically writes `bytes` to `path` (see the module docs for the steps).
pub(super) fn write_atomic(path: &Path, bytes: &[u8], replace: Replace) -> io::Result<Durability> {
    write_atomic_with(path, bytes, replace, &|f: &File| f.sync_all())
}

/// [`write_atomic`] with the fsync supplied, so tests can refuse it the way a filter does.
pub(super) fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    replace: Replace,
    sync: &dyn Fn(&File) -> io::Result<()>,
) -> io::Result<Durability> {
    let dir = parent_of(path);
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    if replace == Replace::Never && occupied(path)? {
        // Checked first so a kept file costs no write; the rename below closes the race.
        return Err(kept(path));
    }
    refuse_unsafe_target(path)?;
    // Dropped on any failure below, which removes the temp file.
    let mut tmp = temp_beside(path)?;
    let mut refused = None;
    tmp.write_all(bytes)?;
    tolerate_refusal(sync(tmp.as_file()), &mut refused)?;
    refuse_unsafe_target(path)?;
    match replace {
        Replace::Allowed => tmp.persist(path),
        // renameat2(RENAME_NOREPLACE), or on a file system without it a hard link (which never
        // replaces) and an unlink.
        Replace::Never => tmp.persist_noclobber(path),
    }
    .map_err(|e| match e.error.kind() {
        io::ErrorKind::AlreadyExists if replace == Replace::Never => kept(path),
        _ => e.error,
    })?;
    tolerate_refusal(sync(&File::open(dir)?), &mut refused)?;
    Ok(refused.map_or(Durability::Synced, Durability::Unsynced))
}

/// A refused fsync is remembered and passed over; any other failure (EIO: the data may be
/// lost) stays an error.
fn tolerate_refusal(r: io::Result<()>, refused: &mut Option<io::Error>) -> io::Result<()> {
    match r {
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EPERM | libc::EINVAL | libc::ENOSYS)
            ) =>
        {
            refused.get_or_insert(e);
            Ok(())
        }
        other => other,
    }
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

/// Anything at the name, a dangling link included.
fn occupied(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
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

/// A new `.<name>.tmp-XXXXXX` (random) next to `path`, private to root (mode 0600).
fn temp_beside(path: &Path) -> io::Result<NamedTempFile> {
    let mut prefix = OsString::from(".");
    prefix.push(path.file_name().unwrap_or(FILE_NAME.as_ref()));
    prefix.push(".tmp-");
    tempfile::Builder::new()
        .prefix(&prefix)
        .tempfile_in(parent_of(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_files_sit_beside_the_target_and_go_with_their_handle() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = temp_beside(&dir.path().join("procdb.bin")).unwrap();
        assert_eq!(tmp.path().parent(), Some(dir.path()));
        let name = tmp.path().file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with(".procdb.bin.tmp-"), "{name}");
        drop(tmp);
        assert!(names_in(dir.path()).is_empty());
    }

    #[test]
    fn temp_files_are_private_and_leave_nothing_behind() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("procdb.bin");
        assert!(matches!(
            write_atomic(&path, b"hello", Replace::Allowed).unwrap(),
            Durability::Synced
        ));
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

    fn refused_with(errno: i32) -> impl Fn(&File) -> io::Result<()> {
        move |_: &File| Err(io::Error::from_raw_os_error(errno))
    }

    fn names_in(dir: &Path) -> Vec<OsString> {
        let mut v: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_refused_fsync_still_replaces_the_file_completely() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("procdb.bin");
        fs::write(&path, b"old").unwrap();
        for errno in [libc::EPERM, libc::EINVAL, libc::ENOSYS] {
            let r = write_atomic_with(
                &path,
                b"new and complete",
                Replace::Allowed,
                &refused_with(errno),
            )
            .unwrap();
            match r {
                Durability::Unsynced(e) => assert_eq!(e.raw_os_error(), Some(errno)),
                Durability::Synced => panic!("errno {errno} reported as synced"),
            }
            assert_eq!(fs::read(&path).unwrap(), b"new and complete");
            assert_eq!(names_in(dir.path()), [OsString::from("procdb.bin")]);
            fs::write(&path, b"old").unwrap();
        }
    }

    #[test]
    fn a_failed_fsync_keeps_the_old_file_and_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("procdb.bin");
        fs::write(&path, b"old").unwrap();
        let e = write_atomic_with(&path, b"new", Replace::Allowed, &refused_with(libc::EIO))
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(names_in(dir.path()), [OsString::from("procdb.bin")]);
    }

    #[test]
    fn a_refused_directory_fsync_alone_is_reported_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("procdb.bin");
        let calls = std::cell::Cell::new(0);
        let second_refused = |f: &File| {
            calls.set(calls.get() + 1);
            if calls.get() == 2 {
                Err(io::Error::from_raw_os_error(libc::EPERM))
            } else {
                f.sync_all()
            }
        };
        let r = write_atomic_with(&path, b"x", Replace::Allowed, &second_refused).unwrap();
        assert!(matches!(r, Durability::Unsynced(_)), "{r:?}");
        assert_eq!(calls.get(), 2);
        assert_eq!(fs::read(&path).unwrap(), b"x");
    }

    #[test]
    fn never_replace_writes_where_nothing_is_and_keeps_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("procdb.bin");
        assert!(write_atomic(&path, b"first", Replace::Never).is_ok());
        assert_eq!(fs::read(&path).unwrap(), b"first");
        let e = write_atomic(&path, b"second", Replace::Never).unwrap_err();
        assert!(is_kept(&e), "{e}");
        assert!(e.to_string().contains("is kept"), "{e}");
        assert_eq!(fs::read(&path).unwrap(), b"first");
        assert_eq!(names_in(dir.path()), [OsString::from("procdb.bin")]);
        // A failure of another kind is not mistaken for a kept file.
        let bad = path.join("child");
        let e = write_atomic(&bad, b"x", Replace::Never).unwrap_err();
        assert!(!is_kept(&e), "{e}");
    }

    #[test]
    fn the_no_replace_rename_closes_the_race_with_a_file_that_appears() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("procdb.bin");
        // The file appears after the check for it, while the temp file is being synced.
        let appear = |f: &File| {
            if !path.exists() {
                fs::write(&path, b"theirs").unwrap();
            }
            f.sync_all()
        };
        let e = write_atomic_with(&path, b"ours", Replace::Never, &appear).unwrap_err();
        assert!(is_kept(&e), "{e}");
        assert_eq!(fs::read(&path).unwrap(), b"theirs");
        assert_eq!(names_in(dir.path()), [OsString::from("procdb.bin")]);
    }
}
