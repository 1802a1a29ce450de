"""The guest's /init (busybox sh) and the per-run command script it sources.

/init is fixed so that the big part of the initramfs can be cached; the command,
environment and nonce of a run live in /etc/pandemonium/run.sh, appended as a
second small cpio archive (the kernel unpacks concatenated archives in order).
"""

from __future__ import annotations

import shlex

from .console import EXIT_MARKER, RESULTS_BEGIN, RESULTS_END

RUN_SCRIPT = "/etc/pandemonium/run.sh"
GUEST_PATH = "/usr/local/bin:/bin:/sbin:/usr/bin:/usr/sbin"

INIT = f"""#!/bin/sh
export PATH={GUEST_PATH}
export HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf
# devtmpfs lacks these, and shells' process substitution / tools expect them.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
hostname pandemonium-vm
# BPF maps are charged to memlock on kernels without memcg accounting.
ulimit -l unlimited
mkdir -p /results
cd /

. {RUN_SCRIPT}
sh -c "$PANDEMONIUM_CMD" </dev/null
rc=$?

echo "{EXIT_MARKER} $rc $PANDEMONIUM_NONCE"
# Silence everything but emergencies so printk cannot split the results dump.
echo 1 > /proc/sys/kernel/printk
if [ -n "$(ls -A /results)" ]; then
    tar -C /results -czf /tmp/.results.tgz .
    echo "{RESULTS_BEGIN} $PANDEMONIUM_NONCE"
    base64 /tmp/.results.tgz
    echo "{RESULTS_END} $PANDEMONIUM_NONCE $(sha256sum /tmp/.results.tgz | cut -d' ' -f1)"
fi
sync
poweroff -f
"""


def run_script(cmd: list[str] | str, nonce: str, env: dict[str, str] | None = None) -> str:
    """A list runs as that argv (quoted for sh -c); a string is shell code as is."""
    command = cmd if isinstance(cmd, str) else shlex.join(cmd)
    lines = [f"PANDEMONIUM_NONCE={shlex.quote(nonce)}",
             f"PANDEMONIUM_CMD={shlex.quote(command)}"]
    for key, value in (env or {}).items():
        if not key.isidentifier():
            raise ValueError(f"invalid environment variable name: {key!r}")
        lines.append(f"export {key}={shlex.quote(value)}")
    return "\n".join(lines) + "\n"
