// SPDX-License-Identifier: GPL-2.0-only
//! Root's database moved from root's cache to the state directory; the first start after the
//! move copies it over once, so nothing learned before is lost. The old file stays where it was
//! (an older binary, or a downgrade, still finds it).

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::store::{self, Durability, Replace};

/// What the first start found at the old location.
#[derive(Debug)]
pub enum Migration {
    /// Nothing to do: no old file, a database already at the new path, or copied before.
    Nothing,
    Copied {
        from: PathBuf,
        durability: Durability,
    },
    /// The old file could not be read or the new one not written; nothing was changed.
    Failed { from: PathBuf, error: io::Error },
}

impl Migration {
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            Migration::Failed { .. }
                | Migration::Copied {
                    durability: Durability::Unsynced(_),
                    ..
                }
        )
    }
}

impl fmt::Display for Migration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Migration::Nothing => write!(f, "nothing to migrate"),
            Migration::Copied { from, durability } => {
                write!(f, "copied from {} (the old file is kept)", from.display())?;
                if let Durability::Unsynced(e) = durability {
                    write!(f, "; fsync refused ({e}), the kernel writes it back later")?;
                }
                Ok(())
            }
            Migration::Failed { from, error } => write!(
                f,
                "cannot copy the old database {} ({error}); it stays there",
                from.display()
            ),
        }
    }
}

/// Written beside the database once the copy is made. Without it, deleting the database to
/// forget what was learned would bring the old copy back at the next start.
fn marker(path: &Path) -> PathBuf {
    let mut m = path.as_os_str().to_owned();
    m.push(".migrated");
    PathBuf::from(m)
}

/// Anything at the name, a dangling link or an unreadable entry included, means "leave it".
fn occupied(path: &Path) -> bool {
    !matches!(fs::symlink_metadata(path), Err(e) if e.kind() == io::ErrorKind::NotFound)
}

/// Copies `old` to `new` when `new` has never existed; see the module docs.
pub fn migrate(new: &Path, old: &Path) -> Migration {
    if occupied(new) || occupied(&marker(new)) {
        return Migration::Nothing;
    }
    let bytes = match store::read_regular(old) {
        Ok((bytes, _)) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Migration::Nothing,
        Err(error) => {
            return Migration::Failed {
                from: old.to_path_buf(),
                error,
            };
        }
    };
    match store::write_atomic(new, &bytes, Replace::Never) {
        Ok(durability) => {
            let note = format!(
                "{} was copied here from {}; the original is kept. Delete this file and {} to \
                 copy it again at the next start.\n",
                new.display(),
                old.display(),
                new.display()
            );
            // A missing marker only matters once the database is deleted again; the copy
            // itself succeeded, so this is not worth failing the start for.
            let _ = store::write_atomic(&marker(new), note.as_bytes(), Replace::Never);
            Migration::Copied {
                from: old.to_path_buf(),
                durability,
            }
        }
        Err(error) => Migration::Failed {
            from: old.to_path_buf(),
            error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf_intf::Tier;
    use crate::procdb::{LoadOutcome, Observation, ProcDb};

    struct Dirs {
        _tmp: tempfile::TempDir,
        old: PathBuf,
        new: PathBuf,
    }

    fn dirs() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        let old = tmp.path().join("root/.cache/pandemonium/procdb.bin");
        let new = tmp.path().join("var/lib/pandemonium/procdb.bin");
        Dirs {
            old,
            new,
            _tmp: tmp,
        }
    }

    fn learned_db_at(path: &Path) {
        let mut db = ProcDb::with_capacity(16);
        db.observe(&Observation::named("make", Tier::Batch, 5_000_000, 16));
        db.observe(&Observation::named(
            "kwin_x11",
            Tier::Interactive,
            90_000,
            16,
        ));
        db.save(path).unwrap();
    }

    #[test]
    fn the_old_database_is_copied_once_and_kept() {
        let d = dirs();
        learned_db_at(&d.old);
        let before = fs::read(&d.old).unwrap();
        let m = migrate(&d.new, &d.old);
        assert!(matches!(m, Migration::Copied { .. }), "{m:?}");
        assert!(!m.is_warning());
        assert_eq!(fs::read(&d.new).unwrap(), before);
        assert_eq!(fs::read(&d.old).unwrap(), before, "the old file changed");
        let (db, outcome) = ProcDb::load(&d.new, 16);
        assert!(matches!(outcome, LoadOutcome::Loaded { entries: 2, .. }));
        assert_eq!(db.len(), 2);

        // Forgetting on purpose (deleting the database) does not bring the old copy back.
        fs::remove_file(&d.new).unwrap();
        assert!(matches!(migrate(&d.new, &d.old), Migration::Nothing));
        assert!(!d.new.exists());
    }

    #[test]
    fn an_existing_new_database_is_never_overwritten() {
        let d = dirs();
        learned_db_at(&d.old);
        fs::create_dir_all(d.new.parent().unwrap()).unwrap();
        fs::write(&d.new, b"newer").unwrap();
        assert!(matches!(migrate(&d.new, &d.old), Migration::Nothing));
        assert_eq!(fs::read(&d.new).unwrap(), b"newer");
        assert!(!marker(&d.new).exists());
    }

    #[test]
    fn without_an_old_database_nothing_is_created() {
        let d = dirs();
        assert!(matches!(migrate(&d.new, &d.old), Migration::Nothing));
        assert!(!d.new.parent().unwrap().exists());
    }

    #[test]
    fn an_old_path_that_is_a_symlink_is_not_followed() {
        let d = dirs();
        let elsewhere = d.old.with_file_name("elsewhere");
        learned_db_at(&elsewhere);
        std::os::unix::fs::symlink(&elsewhere, &d.old).unwrap();
        let m = migrate(&d.new, &d.old);
        assert!(
            matches!(&m, Migration::Failed { .. }) && m.is_warning(),
            "{m:?}"
        );
        assert!(m.to_string().contains("symlink"), "{m}");
        assert!(!d.new.exists());
    }
}
