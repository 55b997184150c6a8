#!/usr/bin/env bash
# Sandbox stand-in for the system tools the bootstrap calls (localcloud/sandbox.py links
# it under each tool's name). Every call is appended to $SANDBOX_CALLS (name and arguments joined by
# the 0x1f unit separator), then emulated just far enough against the state in $SANDBOX_STATE:
# GPUs/NPUs the driver sees, disks and their file systems, installed packages, mounts, units.
# Nothing here touches the real system.
set -euo pipefail
me=${0##*/}
S=$SANDBOX_STATE
{ printf '%s' "$me"; [ "$#" -eq 0 ] || printf '\037%s' "$@"; printf '\n'; } >>"$SANDBOX_CALLS"

last() { local a; for a in "$@"; do :; done; printf '%s' "${a:-}"; }
accelerators() { cat "$S/gpus" 2>/dev/null || cat "$S/npus" 2>/dev/null || echo 0; }
pkg_name() { local p=${1##*/}; p=${p%.deb}; p=${p%%_*}; printf '%s' "${p%%=*}"; }
install_pkg() {
  local name
  name=$(pkg_name "$1")
  mkdir -p "$S/pkgs" && : >"$S/pkgs/$name"
  case "$name" in
    cuda-drivers-*) cp "$S/gpus_after_install" "$S/gpus" ;;
  esac
}

case "$me" in
  nvidia-smi)
    [ -f "$S/gpus" ] || { echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9; }
    n=$(cat "$S/gpus")
    case "$*" in
      -L) for ((i = 0; i < n; i++)); do echo "GPU $i: NVIDIA Sandbox (UUID: GPU-sandbox-$i)"; done ;;
      *driver_version*) for ((i = 0; i < n; i++)); do printf '%s\n' "$(cat "$S/driver_version")"; done ;;
      *) echo "sandbox nvidia-smi" ;;
    esac ;;
  npu-smi)
    [ -f "$S/npus" ] || { echo "npu-smi: dcmi init failed" >&2; exit 1; }
    if [ "$*" = info ]; then
      # The card table of `npu-smi info` (two rows per card: NPU/name/health, chip/bus id); health per
      # card from $S/npu_health (one status a line), OK when not listed.
      n=$(cat "$S/npus")
      echo "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|"
      for ((i = 0; i < n; i++)); do
        h=$(sed -n "$((i + 1))p" "$S/npu_health" 2>/dev/null || true)
        printf '| %-5s 910B1               | %-13s | 93.6        41                0    / 0             |\n' "$i" "${h:-OK}"
        printf '| 0                         | 0000:C%d:00.0  | 0           0    / 0          3161 / 65536         |\n' "$i"
      done
    else
      printf '\tTotal Count                    : %s\n' "$(cat "$S/npus")"
    fi ;;
  apt-get)
    if [ "${1:-}" = install ] || [[ " $* " == *" install "* ]]; then
      for a in "$@"; do case "$a" in -*|install|DPkg::*|Dpkg::*) ;; *) install_pkg "$a" ;; esac; done
    fi ;;
  dpkg)
    [ "${1:-}" != -i ] || install_pkg "$2" ;;
  dpkg-query)
    [ -e "$S/pkgs/$(last "$@")" ] || exit 1
    printf 'install ok installed' ;;
  apt-cache)
    cat "$S/madison/$(last "$@")" 2>/dev/null || true ;;
  mkfs.xfs)
    d="$S/disks/$(basename "$(last "$@")")"
    echo xfs >"$d/fstype"
    echo "0000aaaa-$(basename "$d")-4000-8000-sandbox" >"$d/uuid" ;;
  blkid)
    d="$S/disks/$(basename "$(last "$@")")"
    if [ -s "$d/fstype" ]; then printf 'TYPE=%s\nUUID=%s\n' "$(cat "$d/fstype")" "$(cat "$d/uuid")"
    elif [ -s "$d/pttype" ]; then printf 'PTTYPE=%s\n' "$(cat "$d/pttype")"
    else exit 2; fi ;;
  lsblk)
    cols=""; dev=""
    for a in "$@"; do case "$a" in /dev/*) dev=$a ;; -*) ;; *) cols=$a ;; esac; done
    row() {  # row NAME SIZE TYPE MOUNTPOINT, printed as the -o columns ask
      local out=() c cs
      IFS=, read -ra cs <<<"$cols"
      for c in "${cs[@]}"; do
        case "$c" in NAME) out+=("$1") ;; SIZE) out+=("$2") ;; TYPE) out+=("$3") ;; MOUNTPOINT) out+=("$4") ;; esac
      done
      echo "${out[*]}"
    }
    if [ -n "$dev" ]; then
      d="$S/disks/${dev#/dev/}"
      row "$dev" "$(cat "$d/size")" disk "$(cat "$d/mountpoint" 2>/dev/null || true)"
      for ((i = 1; i <= $(cat "$d/partitions" 2>/dev/null || echo 0); i++)); do row "$dev$i" 0 part ""; done
    else
      for d in "$S"/disks/*; do row "/dev/${d##*/}" "$(cat "$d/size")" disk "$(cat "$d/mountpoint" 2>/dev/null || true)"; done
    fi ;;
  mount)
    last "$@" >>"$S/mounts"; echo >>"$S/mounts" ;;
  mountpoint)
    grep -qxF -- "$(last "$@")" "$S/mounts" 2>/dev/null ;;
  systemctl)
    unit=$(last "$@"); unit=${unit%.service}
    mkdir -p "$S/units"
    case "$*" in
      *is-active*) [ -e "$S/units/$unit.active" ] ;;
      *is-enabled*) [ -e "$S/units/$unit.enabled" ] ;;
      *enable*--now*|*--now*enable*)
        : >"$S/units/$unit.enabled"; : >"$S/units/$unit.active"
        # What the agent would find at its start: the health marker must already be in place.
        [ ! -e "$SANDBOX_MARKER" ] || cp "$SANDBOX_MARKER" "$S/units/$unit.unhealthy-at-start" ;;
      *enable*) : >"$S/units/$unit.enabled" ;;
      *) ;;
    esac ;;
  curl)
    dst=""; prev=""
    for a in "$@"; do [ "$prev" != -o ] || dst=$a; prev=$a; done
    url=$(last "$@")
    # Downloads become recording scripts: running one is logged as "downloaded <file> args".
    # shellcheck disable=SC2016  # $0/$@ belong to the fake download, not to this shim
    case "$url" in
      *.run) printf '#!/usr/bin/env bash\nexec "%s" "$0" "$@"\n' "$SANDBOX_SHIMS/ascend-run-package" >"$dst" ;;
      *) printf '#!/usr/bin/env bash\nexec "%s" "$0" "$@"\n' "$SANDBOX_SHIMS/downloaded" >"$dst" ;;
    esac ;;
  downloaded)
    # A scenario may give a download an effect (e.g. a client installer that loads a module).
    effect="$S/effects/${1##*/}"
    if [ -f "$effect" ]; then bash "$effect"; fi ;;
  ascend-run-package)
    case "${1##*/}" in
      *npu-driver*) [ -f "$S/npu_needs_reboot" ] || cp "$S/npus_after_install" "$S/npus" ;;
      *cann-toolkit*)
        mkdir -p "$SANDBOX_ASCEND_HOME/ascend-toolkit/latest/x86_64-linux"
        v=${1##*/Ascend-cann-toolkit_}
        printf 'package_name=Ascend-cann-toolkit\nversion=%s\n' "${v%%_*}" \
          >"$SANDBOX_ASCEND_HOME/ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info"
        # shellcheck disable=SC2016  # expanded when set_env.sh is sourced
        printf 'export ASCEND_TOOLKIT_HOME=%s/ascend-toolkit/latest\nexport LD_LIBRARY_PATH=%s/lib64:${LD_LIBRARY_PATH:-}\n' \
          "$SANDBOX_ASCEND_HOME" "$SANDBOX_ASCEND_HOME" >"$SANDBOX_ASCEND_HOME/ascend-toolkit/set_env.sh" ;;
    esac ;;
  id)
    [ -e "$S/users/$(last "$@")" ] ;;
  useradd)
    mkdir -p "$S/users" && : >"$S/users/$(last "$@")" ;;
  ip)
    echo "default via 10.0.0.1 dev eth0 proto dhcp src 10.0.0.5 metric 100" ;;
  nproc)
    cat "$S/nproc" ;;
  python3)
    if [ "${1:-}" = -m ] && [ "${2:-}" = venv ]; then
      mkdir -p "$3/bin"
      for t in python pip; do
        printf '#!/usr/bin/env bash\nexec "%s/venv-%s" "$@"\n' "$SANDBOX_SHIMS" "$t" >"$3/bin/$t"
        chmod +x "$3/bin/$t"
      done
    elif [[ "${1:-}" == */node_agent/loader.py ]]; then
      # cloud-init's runcmd: the loader, with the standard library only (-S: no site-packages), as the image's
      # python3 runs it before the bootstrap made a venv. "copy": the rendered payload from a file (verified
      # all the same).
      if [ "$SANDBOX_FETCH" = real ]; then exec "$SANDBOX_REAL_PYTHON" -S "$@"; fi
      exec "$SANDBOX_REAL_PYTHON" -S "$@" --payload-file "$S/payload.json"
    else
      exec "$SANDBOX_REAL_PYTHON" "$@"
    fi ;;
  venv-python)
    if [ "${1:-}" = -c ]; then
      accelerators
    elif [ "${1:-}" = -m ] && [ "${2:-}" = node_agent.fetch ]; then
      # The fetcher writes under paths.agent: point that into the sandbox root, as a chroot would.
      "$SANDBOX_AGENT_PYTHON" -c 'import json, os, sys
c = json.load(open(sys.argv[1]))
c["paths"]["agent"] = os.environ["GPU_TRAINING_ROOT"] + c["paths"]["agent"]
json.dump(c, open(sys.argv[2], "w"))' "$(last "$@")" "$S/node.json"
      if [ "$SANDBOX_FETCH" = real ]; then
        exec "$SANDBOX_AGENT_PYTHON" -m node_agent.fetch --config "$S/node.json"
      fi
      # Default: no network; the listed files are copied from the repository's agent sources.
      exec "$SANDBOX_AGENT_PYTHON" -c 'import json, os, shutil, sys
c = json.load(open(sys.argv[1]))
for rel in c["artifacts"]["agent"]["files"]:
    dst = os.path.join(c["paths"]["agent"], rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(os.path.join(sys.argv[2], rel.split("/", 1)[1]), dst)' "$S/node.json" "$SANDBOX_AGENT_SRC"
    else
      exec "$SANDBOX_AGENT_PYTHON" "$@"
    fi ;;
  *) ;;  # groupadd, apt-mark, modprobe, sysctl, venv-pip: recording the call is the whole emulation
esac
