// SPDX-License-Identifier: GPL-2.0-only
//! What a game id looks like, where a process carries one, and how untrusted text is logged.

/// Environment variables whose value names a game Steam (or umu-launcher) started.
pub const GAME_ENV: &[&[u8]] = &[b"SteamGameId", b"SteamAppId"];

/// The comm of Steam's launch helper (the kernel sets it from the executable's name at exec).
pub const REAPER_COMM: &[u8] = b"reaper";

/// A Steam app id is a u32; the `SteamGameId` of a non-Steam shortcut is a 64-bit game id (up to
/// 20 digits). Anything longer is no id.
pub const MAX_ID_DIGITS: usize = 20;

/// A game id: 1 to [`MAX_ID_DIGITS`] ASCII digits, not zero (Steam's "no game"). Signs, spaces
/// and other text are refused, so an id is safe to log and compare.
pub fn parse_id(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > MAX_ID_DIGITS || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let id: u64 = std::str::from_utf8(value).ok()?.parse().ok()?;
    (id != 0).then_some(id)
}

/// The game id in a process's `environ` (NUL-separated `KEY=value`), if it carries one.
pub fn environ_id(environ: &[u8]) -> Option<u64> {
    environ.split(|&b| b == 0).find_map(|entry| {
        let eq = entry.iter().position(|&b| b == b'=')?;
        let (key, value) = (&entry[..eq], &entry[eq + 1..]);
        GAME_ENV.contains(&key).then(|| parse_id(value)).flatten()
    })
}

/// The app id in a Steam reaper's `cmdline`: after argv[0] (a script's interpreter puts the
/// script's path there too), `SteamLaunch`, then `AppId=N`, before the `--` that starts the
/// game's own command line. gamescope reads it the same way.
pub fn reaper_id(cmdline: &[u8]) -> Option<u64> {
    let mut launch = false;
    for arg in cmdline.split(|&b| b == 0).skip(1) {
        match arg {
            b"--" => return None,
            b"SteamLaunch" => launch = true,
            _ if launch => {
                if let Some(id) = arg.strip_prefix(b"AppId=").and_then(parse_id) {
                    return Some(id);
                }
            }
            _ => {}
        }
    }
    None
}

/// The NUL-terminated entries of a read that stopped at `cap` bytes: a last entry cut there
/// (`SteamGameId=7` of `SteamGameId=730`) is dropped, not misread.
pub fn whole_entries(read: &[u8], cap: u64) -> &[u8] {
    if (read.len() as u64) < cap {
        return read;
    }
    match read.iter().rposition(|&b| b == 0) {
        Some(end) => &read[..=end],
        None => &[],
    }
}

/// Untrusted bytes (a comm, a path) for a log line: printable ASCII as it is, anything else,
/// and the backslash, as `\xNN`. Nothing a process names itself can forge a line or a
/// terminal escape.
pub fn escape(text: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text {
        if b.is_ascii_graphic() && b != b'\\' || b == b' ' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_a_short_non_zero_digit_string() {
        assert_eq!(parse_id(b"730"), Some(730));
        assert_eq!(
            parse_id(b"12345678901234567890"),
            Some(12345678901234567890)
        );
        for bad in [
            &b""[..],
            b"0",
            b"000",
            b"123456789012345678901",
            b"99999999999999999999", // 20 digits past u64::MAX
            b"+730",
            b"-1",
            b" 730",
            b"730\n",
            b"730x",
            b"\xd9\xa3", // an Arabic-Indic digit
            b"730\x1b[2J",
        ] {
            assert_eq!(parse_id(bad), None, "{}", escape(bad));
        }
    }

    #[test]
    fn steam_game_ids_mark_a_game_and_bad_values_do_not() {
        assert_eq!(environ_id(b"HOME=/root\0SteamGameId=730\0"), Some(730));
        assert_eq!(environ_id(b"SteamAppId=1245620\0"), Some(1245620));
        assert_eq!(environ_id(b"SteamAppId=0\0SteamGameId=\0"), None);
        assert_eq!(environ_id(b"XSteamGameId=730\0STEAM_RUNTIME=1\0"), None);
        assert_eq!(environ_id(b""), None);
        // Untrusted text is no id, and does not hide a good one after it.
        assert_eq!(environ_id(b"SteamGameId=730\n[fake] log line\0"), None);
        assert_eq!(environ_id(b"SteamGameId=x\0SteamAppId=570\0"), Some(570));
        assert_eq!(environ_id(b"SteamGameId=\xff\xfe\0"), None);
    }

    #[test]
    fn a_reaper_names_its_app_before_the_games_command_line() {
        let steam = b"/home/u/.local/share/Steam/ubuntu12_32/reaper\0SteamLaunch\0AppId=730\0--\0\
                      /home/u/.local/share/Steam/ubuntu12_32/steam-launch-wrapper\0--\0./csgo\0";
        assert_eq!(reaper_id(steam), Some(730));
        // A shell script named reaper: the interpreter, then the script, then the arguments.
        assert_eq!(
            reaper_id(b"/bin/sh\0/opt/reaper\0SteamLaunch\0AppId=42\0--\0game\0"),
            Some(42)
        );
        for bad in [
            &b"reaper\0AppId=730\0--\0x\0"[..],      // no SteamLaunch
            b"reaper\0SteamLaunch\0--\0AppId=730\0", // the game's own argument
            b"reaper\0SteamLaunch\0AppId=0\0--\0x\0",
            b"reaper\0SteamLaunch\0AppId=7x\0--\0x\0",
            b"SteamLaunch\0AppId=730\0", // argv[0] is never an argument
            b"",
        ] {
            assert_eq!(reaper_id(bad), None, "{}", escape(bad));
        }
    }

    #[test]
    fn a_read_cut_at_the_cap_loses_its_last_entry() {
        assert_eq!(whole_entries(b"A=1\0SteamGameId=7", 17), b"A=1\0");
        assert_eq!(environ_id(whole_entries(b"A=1\0SteamGameId=7", 17)), None);
        assert_eq!(whole_entries(b"A=1\0B=2\0", 8), b"A=1\0B=2\0");
        assert_eq!(whole_entries(b"SteamGameId=7", 13), b"");
        assert_eq!(whole_entries(b"SteamGameId=730", 4096), b"SteamGameId=730");
    }

    #[test]
    fn escaped_text_cannot_forge_a_line_or_a_terminal_escape() {
        assert_eq!(escape(b"game.exe"), "game.exe");
        assert_eq!(escape(b"Main Thread"), "Main Thread");
        assert_eq!(escape(b"a\nb\x1b[31m\\"), "a\\x0ab\\x1b[31m\\x5c");
        assert_eq!(escape("jé".as_bytes()), "j\\xc3\\xa9");
        assert_eq!(escape(b"\xe6\x97"), "\\xe6\\x97");
    }
}
