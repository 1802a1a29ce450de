// SPDX-License-Identifier: GPL-2.0-only
//! Where the database lives: the state directory as root, the XDG cache for anyone else, and
//! where older versions left it.

use std::ffi::OsString;
use std::path::PathBuf;

/// Root's database directory: the unit's `StateDirectory=pandemonium`, the same place the
/// published scx_pandemonium uses. State, not cache: losing it costs every learned profile.
pub const STATE_DIR: &str = "/var/lib/pandemonium";
pub(super) const FILE_NAME: &str = "procdb.bin";
const DIR_NAME: &str = "pandemonium";

/// The default database path.
///
/// As root (which the scheduler always is, directly, via sudo or as a service) it is
/// `/var/lib/pandemonium/procdb.bin`, whatever HOME, XDG_CACHE_HOME or SUDO_USER say: writing as
/// root into a directory another user owns is exactly the setting in which a planted link
/// redirects a root write, and the profiles describe the machine's workload, not one user's, so
/// `sudo scx_pandemonium`, `sudo -E` and the systemd service share one database. `ProtectHome=`
/// keeps a service out of root's home, which is why it is not there.
///
/// For an ordinary user (tests, tools) it is `$XDG_CACHE_HOME/pandemonium/procdb.bin` if that is
/// absolute, else `$HOME/.cache/...`; `None` when neither is usable.
pub fn default_path() -> Option<PathBuf> {
    resolve_default_path(
        euid(),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
}

/// Where versions before the state directory kept root's database: root's own `.cache` (from
/// the password database). `None` for other users, whose path never moved.
pub fn legacy_path() -> Option<PathBuf> {
    resolve_legacy_path(euid(), || passwd_home(0))
}

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

fn resolve_default_path(
    euid: u32,
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    if euid == 0 {
        return Some(PathBuf::from(STATE_DIR).join(FILE_NAME));
    }
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    let cache = match absolute(xdg_cache_home) {
        Some(x) => x,
        None => absolute(home)?.join(".cache"),
    };
    Some(cache.join(DIR_NAME).join(FILE_NAME))
}

fn resolve_legacy_path(euid: u32, root_home: impl FnOnce() -> Option<PathBuf>) -> Option<PathBuf> {
    (euid == 0).then(|| {
        root_home()
            .unwrap_or_else(|| PathBuf::from("/root"))
            .join(".cache")
            .join(DIR_NAME)
            .join(FILE_NAME)
    })
}

fn passwd_home(uid: u32) -> Option<PathBuf> {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok()??;
    user.dir.is_absolute().then_some(user.dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_uses_the_state_directory_whatever_the_environment_says() {
        let want = Some(PathBuf::from("/var/lib/pandemonium/procdb.bin"));
        let p = resolve_default_path(
            0,
            Some("/home/alice/.cache".into()),
            Some("/home/alice".into()),
        );
        assert_eq!(p, want);
        assert_eq!(resolve_default_path(0, None, None), want);
    }

    #[test]
    fn users_follow_xdg_then_home() {
        let p = resolve_default_path(1000, Some("/x/cache".into()), Some("/home/a".into()));
        assert_eq!(p, Some(PathBuf::from("/x/cache/pandemonium/procdb.bin")));
        let p = resolve_default_path(1000, Some("rel".into()), Some("/home/a".into()));
        assert_eq!(
            p,
            Some(PathBuf::from("/home/a/.cache/pandemonium/procdb.bin"))
        );
        assert_eq!(resolve_default_path(1000, None, Some("rel".into())), None);
        assert_eq!(resolve_default_path(1000, None, None), None);
    }

    #[test]
    fn the_legacy_path_is_roots_cache_and_only_roots() {
        let p = resolve_legacy_path(0, || Some(PathBuf::from("/srv/root")));
        assert_eq!(
            p,
            Some(PathBuf::from("/srv/root/.cache/pandemonium/procdb.bin"))
        );
        let p = resolve_legacy_path(0, || None);
        assert_eq!(
            p,
            Some(PathBuf::from("/root/.cache/pandemonium/procdb.bin"))
        );
        let never = || -> Option<PathBuf> { panic!("root lookup for a user") };
        assert_eq!(resolve_legacy_path(1000, never), None);
    }

    #[test]
    fn root_home_comes_from_the_password_database() {
        let h = passwd_home(0).expect("uid 0 has a passwd entry");
        assert!(h.is_absolute(), "{h:?}");
        assert!(default_path().is_some());
    }
}
