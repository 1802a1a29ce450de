"""Build the guest initramfs: busybox, /init, the kernel config, caller files + libs.

The result is two concatenated cpio archives: a base (everything but the command;
cached by content hash, since compressing it is the slow part) and a tiny per-run
overlay holding the command script.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..common import PandemoniumError, cache_dir, log
from ..packages import missing_message

from . import guest_init
from .cpio import Archive
from .elfdeps import is_elf, resolve_tool, shared_libs

DEFAULT_GUEST_DIR = "/usr/local/bin"
FORMAT_VERSION = "1"  # bump when the layout changes, to invalidate cached images
_KEEP_CACHED = 8

_ETC = {
    "/etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    "/etc/group": "root:x:0:\nnogroup:x:65534:\n",
    "/etc/hostname": "pandemonium-vm\n",
    "/etc/hosts": "127.0.0.1 localhost pandemonium-vm\n",
}
_MOUNT_POINTS = ("/proc", "/sys", "/dev", "/tmp", "/run", "/root", "/results", "/mnt")


@dataclass(frozen=True)
class GuestFile:
    host: Path
    guest: str  # absolute guest path of the file, or of the directory's copy


def parse_add(spec: str) -> GuestFile:
    """HOST[:GUEST]. No GUEST: /usr/local/bin/<name>. GUEST ending in '/': a directory."""
    host, sep, guest = spec.partition(":")
    path = Path(host).expanduser()
    if not sep or not guest:
        guest = f"{DEFAULT_GUEST_DIR}/{path.name}"
    elif guest.endswith("/"):
        guest = guest + path.name
    if not guest.startswith("/"):
        raise PandemoniumError(f"--add {spec}: guest path must be absolute")
    return GuestFile(path, guest.rstrip("/") or "/")


def tool_file(name: str) -> GuestFile:
    """A host tool (stress-ng, perf, ...) placed under its own name in /usr/local/bin."""
    return GuestFile(resolve_tool(name), f"{DEFAULT_GUEST_DIR}/{Path(name).name}")


class _Builder:
    def __init__(self) -> None:
        self.archive = Archive()
        self.libs: set[str] = set()

    def add_host_file(self, host: Path, guest: str) -> None:
        st = host.stat()  # follows symlinks: the guest gets the real contents
        self.archive.add_file(guest, host.read_bytes(), st.st_mode | 0o444)
        if st.st_mode & 0o111 and is_elf(host):
            self.libs.update(shared_libs(host))

    def add(self, item: GuestFile) -> None:
        if not item.host.exists():
            raise PandemoniumError(f"{item.host} does not exist")
        if item.host.is_dir():
            for dirpath, _, filenames in os.walk(item.host, followlinks=True):
                rel = Path(dirpath).relative_to(item.host)
                gdir = f"{item.guest}/{rel}" if str(rel) != "." else item.guest
                self.archive.add_dir(gdir)
                for name in sorted(filenames):
                    self.add_host_file(Path(dirpath) / name, f"{gdir}/{name}")
        else:
            self.add_host_file(item.host, item.guest)

    def add_libs(self) -> None:
        for lib in sorted(self.libs):
            if lib not in self.archive:
                self.archive.add_file(lib, Path(lib).read_bytes(), 0o755)


def _busybox(builder: _Builder) -> None:
    busybox = shutil.which("busybox")
    if not busybox:
        raise PandemoniumError(missing_message(["busybox"], "the guest's shell and tools"))
    builder.add_host_file(Path(busybox), "/bin/busybox")
    listing = subprocess.run([busybox, "--list-full"], capture_output=True, text=True, check=True)
    for path in ["/" + rel for rel in listing.stdout.split()] + ["/bin/sh"]:
        if path not in builder.archive:  # caller files win over applets of the same name
            builder.archive.add_symlink(path, "/bin/busybox")


def build_base(kernel_version: str, config_path: Path, files: list[GuestFile],
               compress: bool = True, init: str | None = None) -> Path:
    """Return the path of the cached base image for these inputs, building it if needed.
    init: the /init script (default: guest_init.INIT, which runs the command itself; the service
    layer's switches to a systemd root file system)."""
    b = _Builder()
    for item in files:
        b.add(item)
    _busybox(b)
    b.add_libs()
    for d in _MOUNT_POINTS:
        b.archive.add_dir(d)
    b.archive.add_dir("/tmp", 0o1777)
    for path, text in _ETC.items():
        b.archive.add_file(path, text.encode())
    b.archive.add_file(f"/boot/config-{kernel_version}", config_path.read_bytes())
    b.archive.add_file("/init", (guest_init.INIT if init is None else init).encode(), 0o755)

    raw = io.BytesIO()
    b.archive.write(raw)
    digest = hashlib.sha256(FORMAT_VERSION.encode() + raw.getbuffer()).hexdigest()[:24]
    cache = cache_dir("initramfs")
    out = cache / f"base-{digest}.cpio{'.gz' if compress else ''}"
    if out.exists():
        out.touch()  # keeps recently used images out of the pruning below
        return out
    log.info("initramfs: building %s (%.1f MiB uncompressed, %d files)", out.name,
             len(raw.getbuffer()) / 2**20, len(b.archive.entries))
    data = gzip.compress(raw.getvalue(), compresslevel=1, mtime=0) if compress else raw.getvalue()
    # Unique temp name + rename: concurrent builders of the same image never see a torn file.
    with tempfile.NamedTemporaryFile(dir=cache, prefix=".tmp-", delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, out)
    _prune(cache)
    return out


def _prune(cache: Path) -> None:
    images = sorted(cache.glob("base-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in images[_KEEP_CACHED:]:
        old.unlink(missing_ok=True)


def overlay(path: str, data: bytes) -> bytes:
    """A cpio archive of the one file a run adds to the base image."""
    archive = Archive()
    archive.add_file(path, data)
    out = io.BytesIO()
    archive.write(out)
    return out.getvalue()


def run_overlay(cmd: list[str] | str, nonce: str, env: dict[str, str] | None = None) -> bytes:
    return overlay(guest_init.RUN_SCRIPT, guest_init.run_script(cmd, nonce, env).encode())


def assemble(base: Path, overlay: bytes, dest: Path) -> Path:
    """Concatenate base + overlay; the kernel accepts a compressed archive followed
    by an uncompressed one (each ends with its own trailer)."""
    with open(dest, "wb") as out, open(base, "rb") as src:
        shutil.copyfileobj(src, out)
        # newc archives must start 4-byte aligned; gzip output length is arbitrary.
        out.write(b"\0" * (-out.tell() % 4))
        out.write(overlay)
    return dest
