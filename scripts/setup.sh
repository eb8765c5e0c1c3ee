#!/usr/bin/env bash
# Installs everything Pairwise's demo and tests need on a fresh Debian machine,
# reusing whatever is already there: Chromium (panel harness), npm packages
# from the lock file, and the pinned Prometheus 3.13.5 / Alertmanager 0.31.1.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v go >/dev/null 2>&1 || need_apt+=(golang)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  step "apt-get install ${need_apt[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# Debian 12's own Go (1.19) and Node (18) are older than Pairwise needs: say so
# rather than fail later in the build.
want_go=$(sed -n 's/^go //p' go.mod)
have_go=$(go env GOVERSION | sed 's/^go//')
if ! printf '%s\n%s\n' "$want_go" "$have_go" | sort -V -C; then
  echo "setup: Go $have_go is older than the $want_go go.mod needs; install Go $want_go or later first" >&2
  exit 1
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "setup: Node $(node -v) is older than the 20 package.json needs; install Node 20 or later first" >&2
  exit 1
fi

if [ -f package-lock.json ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    step "npm ci"
    npm ci --no-audit --no-fund --loglevel=error
  fi
fi

if ! command -v mage >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/mage" ]; then
  step "mage (builds the data source's backend)"
  go install github.com/magefile/mage@v1.17.2
fi

step "pinned Prometheus, Alertmanager and Thanos (tools/install.sh)"
bash tools/install.sh
