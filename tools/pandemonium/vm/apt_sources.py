"""Find the Debian archive mirror the host's apt already uses.

Kernels come from whatever mirror the machine is configured for (a local proxy, a
snapshot, a CI cache...), so no host name is ever written into the repo.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..common import PandemoniumError

# Suites of the main archive. Third-party repos use their own suite names
# ("nodistro", "cloud-sdk-bookworm"), which is what tells them apart.
_DEBIAN_CODENAMES = {
    "buster", "bullseye", "bookworm", "trixie", "forky", "duke", "sid",
    "oldoldstable", "oldstable", "stable", "testing", "unstable", "experimental",
}
_SUITE_SUFFIXES = ("", "-updates", "-backports", "-proposed-updates", "-backports-sloppy")


@dataclass
class SourceEntry:
    types: list[str]
    uris: list[str]
    suites: list[str]
    options: dict[str, str]


def parse_one_line(text: str) -> list[SourceEntry]:
    """Parse classic sources.list lines: `deb [opt=val ...] URI SUITE COMP...`."""
    entries = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        options: dict[str, str] = {}
        m = re.match(r"^(deb|deb-src)\s+\[([^\]]*)\]\s+(.*)$", line)
        if m:
            kind, opts, rest = m.groups()
            for opt in opts.split():
                key, _, value = opt.partition("=")
                options[key.lower()] = value
        else:
            kind, _, rest = line.partition(" ")
            if kind not in ("deb", "deb-src"):
                continue
        words = rest.split()
        if len(words) < 2:
            continue
        entries.append(SourceEntry([kind], [words[0]], [words[1]], options))
    return entries


def parse_deb822(text: str) -> list[SourceEntry]:
    """Parse .sources stanzas (deb822). Continuation lines (inline keys) are skipped."""
    entries = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for raw in stanza.splitlines():
            # Continuation lines only carry inline Signed-By key blocks, which we don't use.
            if raw.startswith("#") or raw[:1] in (" ", "\t"):
                continue
            key, sep, value = raw.partition(":")
            if sep:
                fields[key.strip().lower()] = value.strip()
        if not fields.get("uris"):
            continue
        if fields.get("enabled", "yes").lower() in ("no", "false", "0"):
            continue
        options = {k: v for k, v in fields.items()
                   if k not in ("types", "uris", "suites", "components")}
        entries.append(SourceEntry(fields.get("types", "deb").split(), fields["uris"].split(),
                                   fields.get("suites", "").split(), options))
    return entries


def is_debian_suite(suite: str) -> bool:
    suite = suite.rstrip("/")
    return any(suite == name + sfx for name in _DEBIAN_CODENAMES for sfx in _SUITE_SUFFIXES)


def is_main_archive(entry: SourceEntry, uri: str) -> bool:
    if "deb" not in entry.types:
        return False
    if "security" in uri or any("security" in s for s in entry.suites):
        return False
    if entry.options.get("enabled", "yes").lower() in ("no", "false", "0"):
        return False
    return any(is_debian_suite(s) for s in entry.suites)


def pick_debian_mirror(entries: list[SourceEntry]) -> tuple[str, str | None]:
    """Return (uri, keyring-or-None) of the first main-archive entry, preferring
    URIs whose path ends in /debian (a mirror may also host other trees)."""
    candidates = [(uri.rstrip("/"), e) for e in entries for uri in e.uris if is_main_archive(e, uri)]
    if not candidates:
        raise LookupError("no Debian main-archive entry found in apt sources")
    candidates.sort(key=lambda c: 0 if c[0].endswith("/debian") else 1)  # stable sort keeps order
    uri, entry = candidates[0]
    keyring = entry.options.get("signed-by")
    if not keyring or not keyring.startswith("/"):
        keyring = None  # inline key block or fingerprint: fall back to the default keyrings
    return uri, keyring


def read_system_sources(etc: Path = Path("/etc/apt")) -> list[SourceEntry]:
    entries: list[SourceEntry] = []
    main = etc / "sources.list"
    if main.is_file():
        entries += parse_one_line(main.read_text(errors="replace"))
    parts = etc / "sources.list.d"
    if parts.is_dir():
        for path in sorted(parts.iterdir()):
            # Only these suffixes are read by apt itself; "*.disabled" etc. are ignored.
            if path.suffix == ".list":
                entries += parse_one_line(path.read_text(errors="replace"))
            elif path.suffix == ".sources":
                entries += parse_deb822(path.read_text(errors="replace"))
    return entries


def system_debian_mirror(etc: Path = Path("/etc/apt")) -> tuple[str, str | None]:
    """PANDEMONIUM_DEBIAN_MIRROR wins, for hosts that are not Debian at all."""
    override = os.environ.get("PANDEMONIUM_DEBIAN_MIRROR")
    if override:
        return override.rstrip("/"), None
    try:
        return pick_debian_mirror(read_system_sources(etc))
    except LookupError as exc:
        raise PandemoniumError(f"{exc}. Set PANDEMONIUM_DEBIAN_MIRROR to a Debian mirror URI "
                               "(e.g. the 'URIs:' value of a Debian apt source).") from None
