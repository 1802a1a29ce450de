// SPDX-License-Identifier: GPL-2.0-only
//! What a save deserves in the log. A failed save is a warning each time (learned profiles are
//! at risk); a refused fsync only the first time, since under a `~@sync` filter it is refused at
//! every save, once a minute, and the file is complete each time. A save refused to keep a file
//! the load could not use is only a debug line: the load's warning said so, once.

use log::Level;
use std::io;
use std::path::Path;

use super::store::{Durability, is_kept};

#[derive(Debug, Default)]
pub struct SaveReport {
    unsynced_warned: bool,
}

impl SaveReport {
    /// The log line for one save of `profiles` profiles to `path`, or `None` for a routine
    /// periodic save. `last` is the save on the way out, which is always worth a line.
    pub fn line(
        &mut self,
        path: &Path,
        profiles: usize,
        result: &io::Result<Durability>,
        last: bool,
    ) -> Option<(Level, String)> {
        let path = path.display();
        match result {
            Err(e) if is_kept(e) => Some((Level::Debug, format!("procdb: not saved: {e}"))),
            Err(e) => Some((Level::Warn, format!("procdb: cannot save {path}: {e}"))),
            Ok(Durability::Unsynced(e)) => {
                let first = !std::mem::replace(&mut self.unsynced_warned, true);
                let level = if first { Level::Warn } else { Level::Debug };
                Some((
                    level,
                    format!(
                        "procdb: saved {profiles} profiles to {path}, but fsync was refused \
                         ({e}): the file is complete and the kernel writes it back later (a \
                         crash in the next seconds would lose this save only)"
                    ),
                ))
            }
            Ok(Durability::Synced) if last => Some((
                Level::Info,
                format!("procdb: saved {profiles} profiles to {path}"),
            )),
            Ok(Durability::Synced) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eperm() -> io::Result<Durability> {
        Ok(Durability::Unsynced(io::Error::from_raw_os_error(
            libc::EPERM,
        )))
    }

    #[test]
    fn a_refused_fsync_warns_once_then_stays_at_debug() {
        let mut r = SaveReport::default();
        let p = Path::new("/var/lib/pandemonium/procdb.bin");
        let (level, text) = r.line(p, 7, &eperm(), false).unwrap();
        assert_eq!(level, Level::Warn);
        assert!(text.contains("saved 7 profiles"), "{text}");
        assert!(text.contains("fsync was refused"), "{text}");
        assert!(!text.contains("cannot save"), "{text}");
        assert_eq!(r.line(p, 7, &eperm(), false).unwrap().0, Level::Debug);
        assert_eq!(r.line(p, 7, &eperm(), true).unwrap().0, Level::Debug);
    }

    #[test]
    fn a_failed_save_warns_every_time() {
        let mut r = SaveReport::default();
        let p = Path::new("/x/procdb.bin");
        for _ in 0..2 {
            let e = Err(io::Error::from_raw_os_error(libc::ENOSPC));
            let (level, text) = r.line(p, 3, &e, false).unwrap();
            assert_eq!(level, Level::Warn);
            assert!(
                text.starts_with("procdb: cannot save /x/procdb.bin"),
                "{text}"
            );
        }
    }

    #[test]
    fn routine_saves_are_quiet_and_the_last_one_is_said() {
        let mut r = SaveReport::default();
        let p = Path::new("/x/procdb.bin");
        assert!(r.line(p, 3, &Ok(Durability::Synced), false).is_none());
        let (level, text) = r.line(p, 3, &Ok(Durability::Synced), true).unwrap();
        assert_eq!(level, Level::Info);
        assert_eq!(text, "procdb: saved 3 profiles to /x/procdb.bin");
    }

    #[test]
    fn a_save_refused_to_keep_an_unloaded_file_is_only_a_debug_line() {
        use super::super::store::{Replace, write_atomic};
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("procdb.bin");
        std::fs::write(&p, b"not ours").unwrap();
        let kept = write_atomic(&p, b"x", Replace::Never).map(|_| Durability::Synced);
        let mut r = SaveReport::default();
        for last in [false, true] {
            let (level, text) = r.line(&p, 3, &kept, last).unwrap();
            assert_eq!(level, Level::Debug, "{text}");
            assert!(text.contains("is kept"), "{text}");
        }
    }
}
