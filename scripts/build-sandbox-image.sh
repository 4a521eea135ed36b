#!/usr/bin/env bash
# Builds the sandbox image (the one sandbox-image/Dockerfile describes) from Debian's packages
# alone, for CI and for hosts that cannot pull from an image registry:
#
#   debootstrap --variant=minbase bookworm, then in that root
#   apt-get install --no-install-recommends mordn-sandbox-stand-ins <sandbox-image/packages.txt>,
#     as the Dockerfile does
#   + the sandbox user (uid/gid 1000) and /workspace, as in the Dockerfile
#   | docker import, with the Dockerfile's ENV, WORKDIR, USER and labels
#
# mordn-sandbox-stand-ins is an empty package made in the root, as in the Dockerfile, that
# provides python3-pythran: python3-scipy depends on it but never uses it at run time, and it
# would bring a C++ compiler, the boost headers and python3-dev (see packages.txt).
#
# (The packages go through apt rather than debootstrap --include because debootstrap's resolver
# always takes the first alternative of a dependency, ignoring the alternatives that packages.txt
# names, and knows nothing of the stand-in.)
#
# Usage: scripts/build-sandbox-image.sh [--tag mordn-sandbox:latest] [--mirror URL]
#                                       [--packages FILE] [--pptx-wheel PATH] [--force]
#
# --packages installs another list instead of sandbox-image/packages.txt, in the same format: a
# variant of the image (docs/sandbox-runtime.md). The service relies on what packages.txt lists,
# so start from a copy of it.
#
# The image is labelled with a recipe hash (the package list, this script and any pptx wheel);
# when an image with the tag already carries the same recipe, nothing is rebuilt. --force rebuilds
# anyway, for instance to pick up a Debian point release.
#
# python-pptx is not packaged in bookworm and PyPI may be out of reach: without --pptx-wheel the
# image lacks it. --pptx-wheel unpacks a python_pptx wheel supplied locally (0.6.23, as the
# Dockerfile pins) into the image's dist-packages.
#
# Needs root, debootstrap and a reachable Docker daemon. The root filesystem is built under
# /var/tmp (or $MORDN_BUILD_DIR) and removed on exit.
set -euo pipefail

readonly SUITE=bookworm
readonly RECIPE_LABEL=org.mordn.sandbox-image.recipe
# What the service relies on in the image (SANDBOX_IMAGE_CONTRACT in container-spec.ts; the
# Dockerfile sets the same label). 2: python3-seccomp, for the workspace's seccomp filter.
readonly CONTRACT_LABEL=org.mordn.sandbox-image.contract=2

tag=mordn-sandbox:latest
mirror=http://deb.debian.org/debian
packages_file=
pptx_wheel=
force=0

say() { printf 'build-sandbox-image: %s\n' "$*"; }
die() {
  printf 'build-sandbox-image: error: %s\n' "$*" >&2
  exit 1
}
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --tag) [ $# -ge 2 ] || die "--tag needs a value"; tag=$2; shift 2 ;;
    --tag=*) tag=${1#*=}; shift ;;
    --mirror) [ $# -ge 2 ] || die "--mirror needs a value"; mirror=$2; shift 2 ;;
    --mirror=*) mirror=${1#*=}; shift ;;
    --packages) [ $# -ge 2 ] || die "--packages needs a value"; packages_file=$2; shift 2 ;;
    --packages=*) packages_file=${1#*=}; shift ;;
    --pptx-wheel) [ $# -ge 2 ] || die "--pptx-wheel needs a value"; pptx_wheel=$2; shift 2 ;;
    --pptx-wheel=*) pptx_wheel=${1#*=}; shift ;;
    --force) force=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

script_file=$(readlink -f "${BASH_SOURCE[0]}")
repo_dir=$(dirname "$(dirname "$script_file")")
packages_file=${packages_file:-$repo_dir/sandbox-image/packages.txt}
[ -f "$packages_file" ] || die "missing $packages_file"
packages_file=$(readlink -f "$packages_file")
[ -n "$tag" ] || die "--tag must not be empty"

if [ -n "$pptx_wheel" ]; then
  [ -f "$pptx_wheel" ] || die "--pptx-wheel: no such file: $pptx_wheel"
  case "$(basename "$pptx_wheel")" in
    python_pptx-*.whl) ;;
    *) die "--pptx-wheel: expected a python_pptx-<version>-py3-none-any.whl, got $(basename "$pptx_wheel")" ;;
  esac
  pptx_wheel=$(readlink -f "$pptx_wheel")
fi

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap and chroot need it)"
command -v docker >/dev/null 2>&1 || die "the docker CLI is not installed"
if ! daemon_version=$(docker version --format '{{.Server.Version}}' 2>/dev/null) || [ -z "$daemon_version" ]; then
  die "no Docker daemon answers at ${DOCKER_HOST:-unix:///var/run/docker.sock}; start dockerd first"
fi

# Package list: comments and blank lines dropped.
packages=$(sed -e 's/#.*//' "$packages_file" | tr -s '[:blank:]' '\n' | sed -e '/^$/d' | paste -sd' ' -)
[ -n "$packages" ] || die "$packages_file lists no package"

recipe=$(
  {
    cat "$packages_file" "$script_file"
    if [ -n "$pptx_wheel" ]; then sha256sum <"$pptx_wheel"; fi
  } | sha256sum | cut -d' ' -f1
)

old_id=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
if [ -n "$old_id" ]; then
  old_recipe=$(docker image inspect --format "{{ index .Config.Labels \"$RECIPE_LABEL\" }}" "$tag" 2>/dev/null || true)
  if [ "$force" -eq 0 ] && [ "$old_recipe" = "$recipe" ]; then
    say "$tag is up to date (recipe ${recipe:0:12}, Docker $daemon_version)"
    exit 0
  fi
fi

command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed (apt-get install debootstrap)"
command -v chroot >/dev/null 2>&1 || die "chroot is not installed (coreutils)"

started=$(date +%s)
work_dir=$(mktemp -d "${MORDN_BUILD_DIR:-/var/tmp}/mordn-sandbox-rootfs.XXXXXX")
rootfs=$work_dir/rootfs

cleanup() {
  local status=$? mount_point
  # A failed debootstrap or apt-get can leave /proc or /sys mounted inside the root: unmount,
  # deepest first, and never let rm cross into another filesystem.
  while read -r mount_point; do
    umount -l "$mount_point" 2>/dev/null || true
  done < <(awk -v root="$rootfs" '$2 == root || index($2, root "/") == 1 { print $2 }' /proc/mounts | sort -r)
  rm -rf --one-file-system "$work_dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

in_root() {
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root DEBIAN_FRONTEND=noninteractive \
    chroot "$rootfs" "$@"
}
run_logged() { # run_logged LOG DESCRIPTION COMMAND...: quiet unless it fails
  local log=$1 what=$2
  shift 2
  if ! "$@" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    die "$what failed (last lines above)"
  fi
}

say "debootstrap $SUITE minbase from $mirror"
run_logged "$work_dir/debootstrap.log" debootstrap \
  debootstrap --variant=minbase "$SUITE" "$rootfs" "$mirror"
say "debootstrap done in $(($(date +%s) - started)) s; installing: $packages"

# The stand-in for what packages depend on only to be built, exactly as in sandbox-image/Dockerfile.
mkdir -p "$rootfs/tmp/stand-ins/DEBIAN"
cat >"$rootfs/tmp/stand-ins/DEBIAN/control" <<'EOF'
Package: mordn-sandbox-stand-ins
Version: 1
Architecture: all
Maintainer: Mordn sandbox image <root@localhost>
Provides: python3-pythran
Description: stands in for packages the sandbox image needs no part of
 python3-scipy depends on python3-pythran, which it uses only when it is built, and which
 would bring g++, the boost headers and python3-dev into the image.
EOF
run_logged "$work_dir/stand-ins.log" "building the stand-in package" \
  in_root dpkg-deb --root-owner-group --build /tmp/stand-ins /tmp/mordn-sandbox-stand-ins.deb

mount -t proc proc "$rootfs/proc"
run_logged "$work_dir/apt-update.log" "apt-get update in the root" in_root apt-get update
# shellcheck disable=SC2086 # one word per package
run_logged "$work_dir/apt-install.log" "apt-get install in the root" \
  in_root apt-get install -y --no-install-recommends /tmp/mordn-sandbox-stand-ins.deb $packages
umount "$rootfs/proc"
say "$(in_root dpkg-query -W -f '.' | wc -c) packages installed, $(($(date +%s) - started)) s"

# The sandbox user and /workspace, exactly as in sandbox-image/Dockerfile.
in_root sh -euc '
  groupadd --gid 1000 sandbox
  useradd --uid 1000 --gid 1000 --home-dir /workspace --no-create-home --shell /bin/sh sandbox
  install -d -o 1000 -g 1000 -m 0755 /workspace
'

if [ -n "$pptx_wheel" ]; then
  cp "$pptx_wheel" "$rootfs/tmp/python_pptx.whl"
  in_root python3 -m zipfile -e /tmp/python_pptx.whl /usr/lib/python3/dist-packages
  in_root python3 -m compileall -q /usr/lib/python3/dist-packages/pptx
  rm -f "$rootfs/tmp/python_pptx.whl"
  say "python-pptx $(in_root python3 -c 'import pptx; print(pptx.__version__)') installed from $(basename "$pptx_wheel")"
else
  say "notice: the offline image lacks python-pptx (not packaged in $SUITE, PyPI unreachable); pass --pptx-wheel PATH to add it"
fi

# Trim what a read-only sandbox never uses, as the slim Debian images do: apt lists and caches,
# documentation (copyright files kept), man and info pages, translations, logs, host leftovers.
(
  cd "$rootfs"
  rm -rf var/lib/apt/lists/* var/cache/debconf/*-old usr/share/man/* usr/share/info/* \
    usr/share/groff/* usr/share/lintian/* usr/share/linda/*
  find var/cache/apt var/log -type f -delete
  find usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete
  find usr/share/doc -mindepth 1 -type d -empty -delete
  find usr/share/locale -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  find dev proc sys tmp -xdev -mindepth 1 -delete
  rm -rf debootstrap
  : >etc/resolv.conf
  printf 'localhost\n' >etc/hostname
  chmod 1777 tmp
)

import_log=$work_dir/import.log
if ! new_id=$(
  tar --numeric-owner --xattrs --xattrs-include='*' -C "$rootfs" -c . |
    docker import \
      --message "mordn-sandbox: debootstrap $SUITE minbase + sandbox-image/packages.txt" \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV HOME=/workspace LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 MPLBACKEND=Agg MPLCONFIGDIR=/tmp/matplotlib' \
      --change 'LABEL org.opencontainers.image.title="mordn-sandbox"' \
      --change "LABEL $RECIPE_LABEL=$recipe" \
      --change "LABEL $CONTRACT_LABEL" \
      --change 'WORKDIR /workspace' \
      --change 'USER 1000:1000' \
      --change 'CMD ["bash"]' \
      - 2>"$import_log"
); then
  cat "$import_log" >&2
  die "docker import failed"
fi

# Check the image the way sandboxes run it before giving it the tag, so a broken build is never
# taken for an up-to-date one.
smoke='
import matplotlib.pyplot as plt, pandas, openpyxl, docx, pypdf, lxml, PIL, xlsxwriter, os, ssl
import numpy, scipy.stats, sklearn, seaborn, statsmodels.api, sympy, networkx, subprocess, sys
plt.plot([1, 2]); plt.savefig("/tmp/smoke.png")
scipy.stats.siegelslopes([1.0, 2.0, 4.0])  # built by pythran with scipy: runs without it
assert ssl.create_default_context().cert_store_stats()["x509_ca"] > 0, "no CA bundle"
subprocess.run([sys.executable, "-m", "pip", "--version"], check=True, stdout=subprocess.DEVNULL)
assert os.getuid() == 1000 and os.getcwd() == "/workspace"
'
if [ -n "$pptx_wheel" ]; then smoke+=$'import pptx\n'; fi
if ! docker run --rm --network none --read-only --tmpfs /tmp --cap-drop ALL \
  --security-opt no-new-privileges "$new_id" python3 -c "$smoke"; then
  docker rmi "$new_id" >/dev/null 2>&1 || true
  die "the imported image failed its smoke test (imports or matplotlib under a read-only root)"
fi

docker tag "$new_id" "$tag"
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  docker rmi "$old_id" >/dev/null 2>&1 || true
fi
size=$(docker image inspect --format '{{.Size}}' "$tag")
say "built $tag (${new_id#sha256:}) recipe ${recipe:0:12}, $((size / 1024 / 1024)) MiB, in $(($(date +%s) - started)) s"
