#!/usr/bin/env bash
# Packs the library exactly as npm would publish it (`npm pack` runs `prepare`, which builds
# dist/) and puts the tarball where examples/nextjs/package.json expects it (vendor/mordn.tgz), so
# the example installs the packaged library rather than linking the source tree.
#
# Usage: scripts/pack-example.sh [DESTINATION]     (default: examples/nextjs/vendor)
#
# Prints the tarball's path. Then: cd examples/nextjs && npm install && npm run build
set -euo pipefail
cd "$(dirname "$0")/.."

destination=${1:-examples/nextjs/vendor}
mkdir -p "$destination"
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT

# npm prints the build's output too; the tarball's name is its last line.
name=$(npm pack --silent --pack-destination "$staging" | tail -n 1)
mv "$staging/$name" "$destination/mordn.tgz"
echo "$(cd "$destination" && pwd)/mordn.tgz"
