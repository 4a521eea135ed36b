#!/usr/bin/env bash
# Installs the out-of-process MCP clients the interop tests (test/mcp-interop.test.ts) drive the
# sandbox MCP endpoint with, each pinned to an exact version in a prefix of its own, outside the
# repository (whose own dependencies stay as they are):
#
#   inspector-<v>    @modelcontextprotocol/inspector, the MCP Inspector CLI (needs Node >= 22.19)
#   ai-sdk-mcp-<v>   @ai-sdk/mcp of AI SDK 7 (needs Node >= 22)
#   conformance-<v>  @modelcontextprotocol/conformance, the official conformance suite
#   ai-sdk7-<v>      ai@7 with @ai-sdk/openai-compatible of its line: an AI SDK 7 host and client
#                    (test/ai-sdk7.test.ts, which runs where the suite runs on Node >= 22)
#
# They run on Node 22 from scripts/node-lts.sh (fetched from the npm registry once), installed by
# the machine's npm run on that Node, so the registry is the only network this needs. A prefix
# that is complete (its stamp file names the version) is reused: a warm run only checks stamps.
# Finally it writes `<cache>/env`, `export NAME=value` lines the tests read:
#
#   MORDN_MCP_NODE22_BIN       the directory of Node 22's `node`
#   MORDN_MCP_INSPECTOR_BIN    the Inspector's launcher script
#   MORDN_MCP_AI_SDK_DIR       the prefix whose node_modules holds @ai-sdk/mcp
#   MORDN_MCP_CONFORMANCE_BIN  the conformance suite's CLI script
#   MORDN_AI_SDK7_DIR          the prefix whose node_modules holds ai@7 and its provider
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
ai_sdk7_version=7.0.173
ai_sdk7_openai_compatible_version=3.0.92

log() { printf '== mcp-clients: %s\n' "$*" >&2; }
die() {
  printf 'mcp-clients: %s\n' "$*" >&2
  exit 1
}
# elapsed START: seconds since START (from `date +%s`), for the per-step timings CI prints.
elapsed() { echo "$(($(date +%s) - $1)) s"; }

total_started=$(date +%s)
node22=$(bash "$repo/scripts/node-lts.sh" 22 --bin)
node="$node22/node"
[ -x "$node" ] || die "scripts/node-lts.sh 22 --bin gave $node22, which holds no node"
npm_cli=$(readlink -f "$(command -v npm)" 2>/dev/null || true)
case "$npm_cli" in
*/npm-cli.js) ;;
*) die "cannot find npm's npm-cli.js (npm resolves to '${npm_cli:-nothing}')" ;;
esac

mkdir -p "$cache"
# One install at a time; a second caller waits and then finds everything in place.
exec 9>"$cache/.install.lock"
flock 9

# install_client NAME VERSION PACKAGE@VERSION...: the packages into $cache/NAME-VERSION, unless
# already there. They are installed into a staging directory first and moved into place whole, so
# an interrupted install never leaves a prefix that looks complete.
install_client() {
  local name=$1 version=$2
  shift 2
  local prefix="$cache/$name-$version" started
  if [ "$(cat "$prefix/.mordn-installed" 2>/dev/null)" = "$*" ]; then
    log "$* already in $prefix"
    return
  fi
  started=$(date +%s)
  log "installing $* on Node $("$node" --version)"
  local staging
  staging=$(mktemp -d "$cache/.staging.XXXXXX")
  printf '{ "name": "mordn-mcp-client-%s", "private": true }\n' "$name" >"$staging/package.json"
  (cd "$staging" && PATH="$node22:$PATH" "$node" "$npm_cli" install \
    --save-exact --no-audit --no-fund --loglevel=error --update-notifier=false "$@" >&2) || {
    rm -rf "$staging"
    die "installing $* failed"
  }
  printf '%s\n' "$*" >"$staging/.mordn-installed"
  rm -rf "$prefix"
  mv "$staging" "$prefix"
  log "$* installed in $(elapsed "$started")"
}

install_client inspector "$inspector_version" "@modelcontextprotocol/inspector@$inspector_version"
install_client ai-sdk-mcp "$ai_sdk_mcp_version" "@ai-sdk/mcp@$ai_sdk_mcp_version"
install_client conformance "$conformance_version" "@modelcontextprotocol/conformance@$conformance_version"
install_client ai-sdk7 "$ai_sdk7_version" "ai@$ai_sdk7_version" \
  "@ai-sdk/openai-compatible@$ai_sdk7_openai_compatible_version"

inspector_bin="$cache/inspector-$inspector_version/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
ai_sdk_dir="$cache/ai-sdk-mcp-$ai_sdk_mcp_version"
conformance_bin="$cache/conformance-$conformance_version/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -f "$inspector_bin" ] || die "the Inspector's launcher is not at $inspector_bin"
[ -f "$ai_sdk_dir/node_modules/@ai-sdk/mcp/package.json" ] || die "@ai-sdk/mcp is not in $ai_sdk_dir"
[ -f "$conformance_bin" ] || die "the conformance CLI is not at $conformance_bin"
ai_sdk7_dir="$cache/ai-sdk7-$ai_sdk7_version"
[ -f "$ai_sdk7_dir/node_modules/ai/package.json" ] || die "ai@$ai_sdk7_version is not in $ai_sdk7_dir"

env_file="$cache/env"
{
  printf 'export MORDN_MCP_NODE22_BIN=%s\n' "$node22"
  printf 'export MORDN_MCP_INSPECTOR_BIN=%s\n' "$inspector_bin"
  printf 'export MORDN_MCP_AI_SDK_DIR=%s\n' "$ai_sdk_dir"
  printf 'export MORDN_MCP_CONFORMANCE_BIN=%s\n' "$conformance_bin"
  printf 'export MORDN_AI_SDK7_DIR=%s\n' "$ai_sdk7_dir"
} >"$env_file.tmp"
mv "$env_file.tmp" "$env_file"
log "clients ready in $(elapsed "$total_started"); env file $env_file"
