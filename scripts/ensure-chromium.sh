#!/usr/bin/env bash
# Makes sure a headless Chromium is at /usr/bin/chromium for the browser tests and the dashboard
# benchmark. Installs Debian's `chromium` package with apt-get when it is missing (needs root);
# otherwise fails with one line saying why. Downloads no browser build of its own.
set -euo pipefail
browser=${HENGE_CHROMIUM:-/usr/bin/chromium}

if [ -x "$browser" ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: $browser is missing and apt-get is not available to install Debian's chromium" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
  else
    echo "error: $browser is missing and installing chromium needs root (or passwordless sudo)" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing Debian's chromium package (for the browser tests)" >&2
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >&2 || { echo "error: apt-get update failed" >&2; exit 1; }
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium fonts-liberation >&2 \
  || { echo "error: apt-get install chromium failed" >&2; exit 1; }
if [ ! -x "$browser" ]; then
  echo "error: chromium was installed but $browser is not there" >&2
  exit 1
fi
