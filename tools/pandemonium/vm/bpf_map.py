"""Reads a running scheduler's BPF map by name through the bpf() syscall, standard library only:
the service layer's guest has no bpftool and no Rust gate binary, and it must see what BPF decided
(a game thread's tier), not what the daemon says it asked for. Root only. x86_64 (the VM's
architecture): the syscall number is that architecture's.
"""

from __future__ import annotations

import ctypes
import os
import struct

SYS_BPF = 321  # x86_64
BPF_MAP_LOOKUP_ELEM = 1
BPF_MAP_GET_NEXT_KEY = 4
BPF_MAP_GET_NEXT_ID = 12
BPF_MAP_GET_FD_BY_ID = 14
BPF_OBJ_GET_INFO_BY_FD = 15
ENOENT = 2
# struct bpf_map_info up to its name: type, id, key_size, value_size, max_entries, map_flags,
# name[16].
MAP_INFO = struct.Struct("=6I16s")
# struct task_class_entry (src/bpf/intf.h): tier, confident, pad, samples, avg_runtime_ns.
TASK_CLASS_ENTRY = struct.Struct("=BBHIQ")
TIER_NAMES = {0: "BATCH", 1: "INTERACTIVE", 2: "LAT_CRITICAL"}

_libc = ctypes.CDLL(None, use_errno=True)


def _bpf(cmd: int, attr: ctypes.Array) -> int:
    ret = _libc.syscall(SYS_BPF, cmd, attr, len(attr))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"bpf({cmd}): {os.strerror(err)}")
    return ret


def _attr(fmt: str, *values) -> ctypes.Array:
    # The kernel reads the union bpf_attr's first bytes; the rest must be zero.
    buf = ctypes.create_string_buffer(128)
    struct.pack_into(fmt, buf, 0, *values)
    return buf


def _map_ids():
    start = 0
    while True:
        attr = _attr("=III", start, 0, 0)
        try:
            _bpf(BPF_MAP_GET_NEXT_ID, attr)
        except OSError as e:
            if e.errno == ENOENT:
                return
            raise
        start = struct.unpack_from("=I", attr, 4)[0]
        yield start


def _info(fd: int) -> tuple[int, int, int, str]:
    info = ctypes.create_string_buffer(MAP_INFO.size)
    _bpf(BPF_OBJ_GET_INFO_BY_FD, _attr("=IIQ", fd, MAP_INFO.size, ctypes.addressof(info)))
    _type, map_id, key_size, value_size, _max, _flags, name = MAP_INFO.unpack(info.raw)
    return map_id, key_size, value_size, name.split(b"\0")[0].decode(errors="replace")


def read(name: str) -> dict[bytes, bytes]:
    """Every entry of the newest map called `name` (an earlier instance's maps linger while
    something holds them). Raises LookupError when no map has that name."""
    best = None
    for map_id in _map_ids():
        try:
            fd = _bpf(BPF_MAP_GET_FD_BY_ID, _attr("=III", map_id, 0, 0))
        except OSError:
            continue  # gone since it was listed
        meta = _info(fd)
        if meta[3] == name and (best is None or meta[0] > best[1][0]):
            if best is not None:
                os.close(best[0])
            best = (fd, meta)
        else:
            os.close(fd)
    if best is None:
        raise LookupError(f"no BPF map named {name}")
    fd, (_id, key_size, value_size, _name) = best
    try:
        out = {}
        key = None
        while True:
            nxt = ctypes.create_string_buffer(key_size)
            cur = ctypes.create_string_buffer(key, key_size) if key is not None else None
            try:
                _bpf(BPF_MAP_GET_NEXT_KEY, _attr("=IIQQ", fd, 0,
                                                 ctypes.addressof(cur) if cur else 0,
                                                 ctypes.addressof(nxt)))
            except OSError as e:
                if e.errno == ENOENT:
                    return out
                raise
            key = nxt.raw
            val = ctypes.create_string_buffer(value_size)
            try:
                _bpf(BPF_MAP_LOOKUP_ELEM, _attr("=IIQQQ", fd, 0, ctypes.addressof(nxt),
                                                ctypes.addressof(val), 0))
            except OSError as e:
                if e.errno != ENOENT:  # deleted between the two calls
                    raise
                continue
            out[key] = val.raw
    finally:
        os.close(fd)


def comm_of(key: bytes) -> str:
    """A comm_key's name: the kernel's comm bytes up to the first NUL."""
    return key.split(b"\0")[0].decode(errors="replace")


def tier_of(entry: bytes) -> str:
    """A task_class_entry's tier, by name."""
    tier = TASK_CLASS_ENTRY.unpack_from(entry)[0]
    return TIER_NAMES.get(tier, f"tier {tier}")


def task_tiers() -> dict[str, str]:
    """What BPF last published per comm (task_profiles): comm -> tier name."""
    return {comm_of(k): tier_of(v) for k, v in read("task_profiles").items()}
