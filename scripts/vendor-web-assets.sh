#!/usr/bin/env bash
# Reproduces the dashboard's vendored chart library: Chart.js (MIT), pinned by version and by the
# npm registry's integrity digest, copied into scheduler/web/static/vendor/ with its licence.
# The pages load it from the package at run time; nothing comes from the internet then.
set -euo pipefail
VERSION=4.4.9
INTEGRITY="sha512-EyZ9wWKgpAU0fLJ43YAEIF8sr5F2W3LqbS40ZJyHIner2lY14ufqv2VMp69MAiZ2rpwxEUxEhIH/0U3xyRynxg=="

root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/scheduler/web/static/vendor"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v npm >/dev/null 2>&1 || { echo "error: npm is needed (apt-get install npm)" >&2; exit 1; }
(cd "$work" && npm pack --silent "chart.js@$VERSION" >/dev/null)
tarball="$work/chart.js-$VERSION.tgz"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$INTEGRITY" ]; then
  echo "error: chart.js@$VERSION does not match the pinned integrity ($actual)" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work" package/dist/chart.umd.js package/LICENSE.md
mkdir -p "$dest"
cp "$work/package/dist/chart.umd.js" "$dest/chart.umd.js"
cp "$work/package/LICENSE.md" "$dest/chart.js.LICENSE.md"
echo "chart.js $VERSION -> $dest/chart.umd.js"
