#!/usr/bin/env bash
# Installs the out-of-process MCP clients the interop tests (test/mcp-interop.test.ts) drive the
# sandbox MCP endpoint with, each pinned to an exact version in a prefix of its own, outside the
# repository (whose own dependencies stay as they are):
#
#   inspector-<v>    @modelcontextprotocol/inspector, the MCP Inspector CLI (needs Node >= 22.19)
#   ai-sdk-mcp-<v>   @ai-sdk/mcp of AI SDK 7 (needs Node >= 22)
#   conformance-<v>  @modelcontextprotocol/conformance, the official conformance suite
#
# They run on Node 22 from scripts/node22.sh (fetched from the npm registry once), installed by
# the machine's npm run on that Node, so the registry is the only network this needs. A prefix
# that is complete (its stamp file names the version) is reused: a warm run only checks stamps.
# Finally it writes `<cache>/env`, `export NAME=value` lines the tests read:
#
#   MORDN_MCP_NODE22_BIN       the directory of Node 22's `node`
#   MORDN_MCP_INSPECTOR_BIN    the Inspector's launcher script
#   MORDN_MCP_AI_SDK_DIR       the prefix whose node_modules holds @ai-sdk/mcp
#   MORDN_MCP_CONFORMANCE_BIN  the conformance suite's CLI script
#
# The tests point NODE_COMPILE_CACHE at <cache>/compile-cache, so the clients start faster once warm.
#
# Environment: MORDN_MCP_CLIENTS_CACHE (default ~/.cache/mordn-mcp-clients).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${MORDN_MCP_CLIENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mordn-mcp-clients}
inspector_version=2.12.0
ai_sdk_mcp_version=2.0.3
conformance_version=0.2.0-alpha.12

log() { printf '== mcp-clients: %s\n' "$*" >&2; }
die() {
  printf 'mcp-clients: %s\n' "$*" >&2
  exit 1
}
# elapsed START: seconds since START (from `date +%s`), for the per-step timings CI prints.
elapsed() { echo "$(($(date +%s) - $1)) s"; }

total_started=$(date +%s)
node22=$(bash "$repo/scripts/node22.sh" --bin)
node="$node22/node"
[ -x "$node" ] || die "scripts/node22.sh --bin gave $node22, which holds no node"
npm_cli=$(readlink -f "$(command -v npm)" 2>/dev/null || true)
case "$npm_cli" in
*/npm-cli.js) ;;
*) die "cannot find npm's npm-cli.js (npm resolves to '${npm_cli:-nothing}')" ;;
esac

mkdir -p "$cache"
# One install at a time; a second caller waits and then finds everything in place.
exec 9>"$cache/.install.lock"
flock 9

# install_client NAME PACKAGE VERSION: PACKAGE@VERSION into $cache/NAME-VERSION, unless already there.
# It is installed into a staging directory first and moved into place whole, so an interrupted
# install never leaves a prefix that looks complete.
install_client() {
  local name=$1 package=$2 version=$3
  local prefix="$cache/$name-$version" started
  if [ "$(cat "$prefix/.mordn-installed" 2>/dev/null)" = "$package@$version" ]; then
    log "$package@$version already in $prefix"
    return
  fi
  started=$(date +%s)
  log "installing $package@$version on Node $("$node" --version)"
  local staging
  staging=$(mktemp -d "$cache/.staging.XXXXXX")
  printf '{ "name": "mordn-mcp-client-%s", "private": true }\n' "$name" >"$staging/package.json"
  (cd "$staging" && PATH="$node22:$PATH" "$node" "$npm_cli" install \
    --save-exact --no-audit --no-fund --loglevel=error --update-notifier=false \
    "$package@$version" >&2) || {
    rm -rf "$staging"
    die "installing $package@$version failed"
  }
  printf '%s\n' "$package@$version" >"$staging/.mordn-installed"
  rm -rf "$prefix"
  mv "$staging" "$prefix"
  log "$package@$version installed in $(elapsed "$started")"
}

install_client inspector @modelcontextprotocol/inspector "$inspector_version"
install_client ai-sdk-mcp @ai-sdk/mcp "$ai_sdk_mcp_version"
install_client conformance @modelcontextprotocol/conformance "$conformance_version"

inspector_bin="$cache/inspector-$inspector_version/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
ai_sdk_dir="$cache/ai-sdk-mcp-$ai_sdk_mcp_version"
conformance_bin="$cache/conformance-$conformance_version/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -f "$inspector_bin" ] || die "the Inspector's launcher is not at $inspector_bin"
[ -f "$ai_sdk_dir/node_modules/@ai-sdk/mcp/package.json" ] || die "@ai-sdk/mcp is not in $ai_sdk_dir"
[ -f "$conformance_bin" ] || die "the conformance CLI is not at $conformance_bin"

env_file="$cache/env"
{
  printf 'export MORDN_MCP_NODE22_BIN=%s\n' "$node22"
  printf 'export MORDN_MCP_INSPECTOR_BIN=%s\n' "$inspector_bin"
  printf 'export MORDN_MCP_AI_SDK_DIR=%s\n' "$ai_sdk_dir"
  printf 'export MORDN_MCP_CONFORMANCE_BIN=%s\n' "$conformance_bin"
} >"$env_file.tmp"
mv "$env_file.tmp" "$env_file"
log "clients ready in $(elapsed "$total_started"); env file $env_file"
