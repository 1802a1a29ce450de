"""Get a sched_ext-capable guest kernel (vmlinuz + its config), cached per version.

Debian packages the kernel two ways: up to 6.x `linux-image-V` holds
boot/vmlinuz-V and boot/config-V; from 7.x `linux-image-V` is a tiny meta package,
the image is in `linux-binary-V` (usr/lib/modules/V/vmlinuz or boot/vmlinuz-V) and
the config in `linux-base-V` (usr/lib/modules/V/config).
"""

from __future__ import annotations

import fcntl
import json
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..common import PandemoniumError, cache_dir, log

from .apt_private import PrivateApt

DEFAULT_KERNEL = "6.18.15+deb13-cloud-amd64"
FLAVOUR = "cloud-amd64"
_KVER = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?\+deb(\d+)-([a-z0-9-]+)$")
# A full linux-image package is megabytes; the 7.x meta package is a few KB.
_META_MAX_KB = 1024


@dataclass(frozen=True)
class KernelInfo:
    version: str
    vmlinuz_path: Path
    config_path: Path


def version_key(version: str) -> tuple[int, ...]:
    """Sort key for Debian kernel ABI names like 7.2.13+deb14-cloud-amd64."""
    m = _KVER.match(version)
    if not m:
        return (-1,)
    major, minor, patch, deb, _ = m.groups()
    return (int(major), int(minor), int(patch or 0), int(deb))


def kernel_versions(pkgnames: list[str], flavour: str = FLAVOUR) -> dict[str, set[str]]:
    """Map kernel version -> which of {image, binary, base} packages exist for it."""
    found: dict[str, set[str]] = {}
    pat = re.compile(rf"^linux-(image|binary|base)-(\d[^ ]*-{re.escape(flavour)})$")
    for name in pkgnames:
        m = pat.match(name)
        if m and _KVER.match(m.group(2)):
            found.setdefault(m.group(2), set()).add(m.group(1))
    return found


def complete_versions(versions: dict[str, set[str]], full_images: set[str]) -> list[str]:
    """Versions whose image and config can both be had, oldest first. Some 7.x
    linux-binary packages were published without their linux-base (config)."""
    def complete(v: str) -> bool:
        kinds = versions[v]
        if "base" in kinds:
            return "binary" in kinds or "image" in kinds
        return "image" in kinds and v in full_images
    return sorted((v for v in versions if complete(v)), key=version_key)


def choose_version(spec: str, versions: dict[str, set[str]], full_images: set[str]) -> str:
    """Resolve `latest` (newest 7.x), a prefix like `7.3`, or a full version.
    full_images: versions whose linux-image package is a real image, not a meta."""
    usable = complete_versions(versions, full_images)
    if spec == "latest":
        pool = [v for v in usable if version_key(v)[0] >= 7]
    elif re.fullmatch(r"\d+(\.\d+){0,2}", spec):
        pool = [v for v in usable if re.match(rf"^{re.escape(spec)}[.+]", v)]
    else:
        pool = [v for v in usable if v == spec]
    if pool:
        return pool[-1]
    incomplete = sorted(set(versions) - set(usable), key=version_key)
    msg = f"no usable {FLAVOUR} kernel matches '{spec}'. Usable: {', '.join(usable) or 'none'}"
    if incomplete:
        msg += f". Published without image or config: {', '.join(incomplete)}"
    raise PandemoniumError(msg)


def _cached(version: str) -> KernelInfo | None:
    d = cache_dir("kernels") / version
    info = KernelInfo(version, d / "vmlinuz", d / f"config-{version}")
    return info if info.vmlinuz_path.is_file() and info.config_path.is_file() else None


def bzimage_version(path: Path) -> str | None:
    """The release string (what `uname -r` will say) from a bzImage's setup header.
    The guest needs it to put the config at /boot/config-$(uname -r) for libbpf."""
    with open(path, "rb") as f:
        head = f.read(0x8000)
    if len(head) < 0x210 or head[0x202:0x206] != b"HdrS":
        return None
    offset = struct.unpack_from("<H", head, 0x20E)[0] + 0x200
    text = head[offset:offset + 256].split(b"\0", 1)[0].decode(errors="replace")
    return text.split(" ", 1)[0] or None


def _from_local_dir(path: Path) -> KernelInfo:
    images = sorted(path.glob("vmlinuz*")) + sorted(path.glob("bzImage"))
    configs = sorted(path.glob("config*")) + sorted(path.glob(".config"))
    if not images or not configs:
        raise PandemoniumError(f"{path}: need a vmlinuz* (or bzImage) and a config* file in it")
    version = bzimage_version(images[0])
    if not version:
        raise PandemoniumError(f"{images[0]} is not a bzImage (no Linux setup header)")
    return KernelInfo(version, images[0], configs[0])


def _newest_cached(spec: str) -> KernelInfo | None:
    root = cache_dir("kernels")
    names = [p.name for p in root.iterdir() if p.is_dir() and _cached(p.name)]
    if spec == "latest":
        names = [n for n in names if version_key(n)[0] >= 7]
    else:
        names = [n for n in names if n == spec or re.match(rf"^{re.escape(spec)}[.+]", n)]
    return _cached(max(names, key=version_key)) if names else None


def _fetch(apt: PrivateApt, version: str, kinds: set[str]) -> KernelInfo:
    dest = cache_dir("kernels") / version
    work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=dest.parent))
    try:
        packages = [f"linux-{k}-{version}" for k in ("image", "binary", "base") if k in kinds]
        log.info("kernel: downloading %s", " ".join(packages))
        debs = apt.download(packages, work)
        for deb in debs:
            subprocess.run(["dpkg-deb", "-x", str(deb), str(work / "root")], check=True)
        root = work / "root"
        image = _first_file(root, [f"boot/vmlinuz-{version}", f"usr/lib/modules/{version}/vmlinuz"])
        config = _first_file(root, [f"boot/config-{version}", f"usr/lib/modules/{version}/config"])
        if not image or not config:
            raise PandemoniumError(f"packages {', '.join(d.name for d in debs)} lack "
                                   f"{'vmlinuz' if not image else 'config'} for {version}")
        staged = work / "out"
        staged.mkdir()
        shutil.copy2(image, staged / "vmlinuz")
        shutil.copy2(config, staged / f"config-{version}")
        shutil.rmtree(dest, ignore_errors=True)
        staged.rename(dest)  # atomic: a half-fetched kernel is never seen as cached
    finally:
        shutil.rmtree(work, ignore_errors=True)
    info = _cached(version)
    assert info
    log.info("kernel: cached %s in %s", version, dest)
    return info


def _first_file(root: Path, candidates: list[str]) -> Path | None:
    return next((root / rel for rel in candidates if (root / rel).is_file()), None)


def ensure_kernel(spec: str | None = None, refresh: bool = False) -> KernelInfo:
    """spec: None/'default', 'latest' (newest 7.x cloud kernel), a version prefix
    ('7.3'), a full version ('7.3.4+deb13-cloud-amd64'), or a directory holding
    vmlinuz* and config*. A cached full version costs no network at all."""
    spec = (spec or "default").strip()
    if spec == "default":
        spec = DEFAULT_KERNEL
    if "/" in spec or Path(spec).is_dir():
        path = Path(spec).expanduser()
        if not path.is_dir():
            raise PandemoniumError(f"kernel directory {path} does not exist")
        return _from_local_dir(path)
    if not refresh and (hit := _cached(spec)):
        return hit

    apt = PrivateApt()
    # Concurrent runs would collide on apt's own lock and on the kernel directory.
    with open(cache_dir() / ".kernel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _resolve_and_fetch(apt, spec, refresh)


def _resolve_and_fetch(apt: PrivateApt, spec: str, refresh: bool) -> KernelInfo:
    if not refresh and apt.lists_fresh() and (hit := _memo(apt).get(spec)) and (info := _cached(hit)):
        return info
    try:
        # 'latest' or a prefix needs the package lists; reuse them while fresh.
        apt.ensure_lists(force=refresh)
        versions = kernel_versions(apt.pkgnames("linux-"))
        if spec not in versions and _KVER.match(spec) and not refresh:
            apt.ensure_lists(force=True)  # maybe published since the lists were fetched
            versions = kernel_versions(apt.pkgnames("linux-"))
        sizes = apt.installed_sizes_kb([f"linux-image-{v}" for v in versions if "image" in versions[v]])
        full = {v for v in versions if sizes.get(f"linux-image-{v}", 0) > _META_MAX_KB}
        version = choose_version(spec, versions, full)
    except PandemoniumError as exc:
        fallback = _newest_cached(spec)
        if fallback:
            log.warning("kernel: %s; using cached %s", exc, fallback.version)
            return fallback
        raise
    info = None if refresh else _cached(version)
    if not info:
        kinds = versions[version]
        if "binary" in kinds:
            kinds = kinds - {"image"}  # 7.x meta package: nothing to take from it
        info = _fetch(apt, version, kinds)
    _remember(apt, spec, version)
    return info


def _memo(apt: PrivateApt) -> dict[str, str]:
    """Earlier resolutions of 'latest'/prefixes (~1 s of apt-cache each), valid as
    long as the package lists they were made from."""
    try:
        saved = json.loads((cache_dir("kernels") / "resolved.json").read_text())
        return saved["specs"] if saved.get("lists") == apt.stamp.stat().st_mtime else {}
    except (OSError, ValueError, KeyError):
        return {}


def _remember(apt: PrivateApt, spec: str, version: str) -> None:
    saved = {"lists": apt.stamp.stat().st_mtime, "specs": {**_memo(apt), spec: version}}
    (cache_dir("kernels") / "resolved.json").write_text(json.dumps(saved))
