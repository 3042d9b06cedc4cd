#!/bin/sh
# Prepare this machine for the judge's sandbox (sandbox/bwrap.py). Idempotent: run it as
# often as you like; the project's setup script and CI call it.
#
#   sudo scripts/install_sandbox.sh [--slots N] [--check]
#
# 1. Installs what the sandbox runs (Debian/Ubuntu, as root): bubblewrap, tini (the init
#    of each warm job), libseccomp2 (the seccomp filters, through ctypes), util-linux
#    (setpriv drops to the sandbox uid).
# 2. Creates one unprivileged user and group per worker slot: torchjudge0 .. torchjudge<N-1>
#    with uid = gid = 61000 + slot, no home, no shell, no other group. Submissions of slot
#    N run as that uid (never as root). --slots defaults to $TORCH_JUDGE_SLOTS or 8.
#    And one per slot for the grader box (sandbox/box.py), which runs an uploaded
#    package's own code (its tests.py): torchjudgebox0 .. with uid = gid = 62000 + slot.
# 3. Creates /run/torch-judge (job folders, the sandbox root's layers, GPU
#    locks); the launcher recreates it after a reboot.
# 4. Checks what the kernel allows: unprivileged user namespaces (bubblewrap needs them),
#    writable memory and pids cgroups (without them the sandbox runs with rlimits only and
#    says so in its log), and finally runs a sandbox as slot 0's uid.
# --check skips 1-3 and only reports.
# --no-check does 1-3 only: for an image build, where no sandbox can run yet (Dockerfile).
set -eu

SLOTS="${TORCH_JUDGE_SLOTS:-8}"
UID_BASE=61000
BOX_UID_BASE=62000
CHECK_ONLY=0
NO_CHECK=0
while [ $# -gt 0 ]; do
    case "$1" in
        --slots) SLOTS="$2"; shift 2 ;;
        --check) CHECK_ONLY=1; shift ;;
        --no-check) NO_CHECK=1; shift ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

say() { printf '%s\n' "install_sandbox: $*"; }
warn() { printf '%s\n' "install_sandbox: WARNING: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
    warn "not root: nothing installed. The judge's sandbox needs root to switch to the"
    warn "slot uids, mount job folders and make cgroups; run this with sudo."
    CHECK_ONLY=1
fi

if [ "$CHECK_ONLY" -eq 0 ]; then
    # ---------------------------------------------------------------- 1. packages
    missing=""
    for pkg in bubblewrap tini libseccomp2 util-linux; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
            || missing="$missing $pkg"
    done
    if [ -n "$missing" ]; then
        say "installing:$missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $missing
    else
        say "packages present: bubblewrap tini libseccomp2 util-linux"
    fi

    # ---------------------------------------------------------------- 2. slot users
    # make_users BASE PREFIX WHAT: one system user and group per slot, uid = BASE + slot.
    make_users() {
        local base=$1 prefix=$2 what=$3 slot=0 id name owner
        while [ "$slot" -lt "$SLOTS" ]; do
            id=$((base + slot))
            name="$prefix$slot"
            owner="$(getent passwd "$id" | cut -d: -f1 || true)"
            if [ -n "$owner" ] && [ "$owner" != "$name" ]; then
                warn "uid $id already belongs to $owner: slot $slot's $what cannot use it"
            else
                getent group "$name" >/dev/null || groupadd --system --gid "$id" "$name"
                getent passwd "$name" >/dev/null || useradd --system --uid "$id" --gid "$id" \
                    --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
                    "$name" 2>/dev/null
            fi
            slot=$((slot + 1))
        done
        say "$what users: ${prefix}0..$prefix$((SLOTS - 1)) (uids $base..$((base + SLOTS - 1)))"
    }
    make_users "$UID_BASE" torchjudge slot
    make_users "$BOX_UID_BASE" torchjudgebox grader-box

    # ---------------------------------------------------------------- 3. run directory
    mkdir -p /run/torch-judge
    chmod 0755 /run/torch-judge
fi

# -------------------------------------------------------------------- 4. checks
if [ "$NO_CHECK" -eq 1 ]; then
    say "checks skipped (--no-check)"
    exit 0
fi
status=0
if ! command -v bwrap >/dev/null 2>&1; then
    warn "bubblewrap is not installed"; status=1
fi
userns="$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)"
if [ "$userns" -eq 0 ]; then
    warn "user namespaces are disabled (user.max_user_namespaces=0): sysctl -w user.max_user_namespaces=15000"
    status=1
fi
if [ "$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo 1)" = 0 ]; then
    warn "unprivileged user namespaces are off: sysctl -w kernel.unprivileged_userns_clone=1"
    status=1
fi
if [ "$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null || echo 0)" = 1 ]; then
    warn "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04+): give bwrap a"
    warn "profile that allows userns, or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
fi
if grep -q ' - cgroup2 ' /proc/self/mountinfo && ! grep -q ' - cgroup ' /proc/self/mountinfo; then
    own="$(sed -n 's/^0:://p' /proc/self/cgroup)"
    ctrl="$(cat "/sys/fs/cgroup$own/cgroup.controllers" 2>/dev/null || true)"
    case "$ctrl" in
        *memory*pids*|*pids*memory*) say "cgroup v2: memory and pids available in $own" ;;
        *) warn "cgroup v2 without memory+pids in $own: run the worker in a delegated"
           warn "cgroup (systemd: Delegate=yes); until then limits are rlimits only" ;;
    esac
else
    say "cgroup v1: memory and pids controllers are used where writable"
fi
if [ "$status" -eq 0 ] && [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    if setpriv --reuid=$UID_BASE --regid=$UID_BASE --clear-groups --inh-caps=-all \
        --bounding-set=-all -- bwrap --unshare-all --unshare-user --disable-userns \
        --uid $UID_BASE --gid $UID_BASE --ro-bind /usr /usr --symlink usr/bin /bin \
        --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev \
        --cap-drop ALL --remount-ro / -- /bin/true; then
        say "a sandbox as uid $UID_BASE works"
    else
        warn "bubblewrap cannot create a sandbox as uid $UID_BASE (inside Docker: allow"
        warn "unshare/clone in its seccomp profile, or run with --privileged)"
        status=1
    fi
fi
exit "$status"
