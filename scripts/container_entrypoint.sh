#!/bin/sh
# The images' entrypoint (Dockerfile): give the sandbox what it needs inside a container,
# using only the privileges docker-compose.yml grants (docs/deploy.md, "The sandbox in a
# container"), then run the command. Every step is skipped where it is not needed or not
# allowed, and says so; the launcher then says what it lacks (SANDBOX DEGRADED, or a refusal).
#
# 1. A fully visible procfs. bubblewrap mounts a fresh /proc inside its user and pid
#    namespaces; the kernel allows that only if this mount namespace already shows a procfs
#    with nothing mounted over parts of it, and Docker masks parts of /proc (/proc/kcore,
#    /proc/acpi ...). A second, unmasked procfs under a folder only root can enter satisfies
#    the kernel and leaves the container's /proc masked (needs CAP_SYS_ADMIN).
# 2. Writable cgroups. Docker mounts the cgroup file systems read-only; the sandbox makes a
#    memory and a pids group per runner (sandbox/cgroup.py). Remounted read-write (needs
#    CAP_SYS_ADMIN, and a cgroup namespace of the container's own, so that its group is
#    the root seen here). On cgroup v2 the processes move into a leaf, /init, so that the container's
#    group may enable the memory and pids controllers for its children.
set -eu

say() { printf '%s\n' "entrypoint: $*" >&2; }

if [ "$(id -u)" -eq 0 ]; then
    # ------------------------------------------------------------ 1. a visible procfs
    VISIBLE=/run/judge-proc
    if ! grep -q " $VISIBLE/proc " /proc/self/mountinfo; then
        mkdir -p "$VISIBLE/proc"
        chmod 0700 "$VISIBLE"
        mount -t proc proc "$VISIBLE/proc" 2>/dev/null \
            || say "cannot mount a second procfs (no CAP_SYS_ADMIN?): bubblewrap may fail to mount /proc"
    fi

    # ------------------------------------------------------------ 2. writable cgroups
    if awk '$5 == "/sys/fs/cgroup"' /proc/self/mountinfo | grep -q ' - cgroup2 '; then
        mount -o remount,rw /sys/fs/cgroup 2>/dev/null || true
        if [ -w /sys/fs/cgroup/cgroup.subtree_control ]; then
            mkdir -p /sys/fs/cgroup/init
            for pid in $(cat /sys/fs/cgroup/cgroup.procs); do
                echo "$pid" > /sys/fs/cgroup/init/cgroup.procs 2>/dev/null || true
            done
            echo "+memory +pids" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null \
                || say "cgroup v2: cannot enable memory and pids for the sandbox's groups"
        else
            say "cgroup v2 is read-only here: runners get rlimits only (see docs/deploy.md)"
        fi
    else
        for controller in memory pids; do
            dir=/sys/fs/cgroup/$controller
            [ -d "$dir" ] || continue
            [ -w "$dir" ] && continue
            mount -o remount,rw "$dir" 2>/dev/null \
                || say "cgroup v1 $controller is read-only here: runners get rlimits only"
        done
    fi
fi

exec "$@"
