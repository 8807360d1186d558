#!/usr/bin/env bash
# Builds the container image from the repository's Dockerfile, as it is, with buildah: no Docker
# engine and no container registry are needed, only Debian's packages and the package index pip
# already uses on this machine. tests/image/ runs this before it runs the image.
#
#   scripts/ensure-image.sh [IMAGE]        # IMAGE, else $HENGE_IMAGE, else localhost/henge:test
#   scripts/ensure-image.sh --base-only    # the tools and the base only
#   (`make test` starts the whole build early, in the background, while the linters run)
#
# The Dockerfile's base (python:3.11-slim-bookworm) lives on Docker Hub, which cannot be reached
# from here, so the build gets a stand-in of our own: a minimal Debian bookworm root made with
# debootstrap, holding Debian's Python 3.11 (with venv, `python` pointing at python3), passwd
# (groupadd/useradd, for the final stage) and this machine's CA bundle (so pip trusts the same
# certificates as the machine). It is built once per machine and reused while `buildah images`
# lists it (`buildah rmi` it to make it anew, e.g. after the machine's CA bundle changed);
# HENGE_BASE_IMAGE names it.
#
# pip inside the build reaches its index the way pip on this machine does: the settings
# `pip config list` shows here (config files and PIP_* variables) are written to one pip.conf
# that the build's RUN steps see as root's user config, together with the local files and
# folders those settings name (find-links, file:// indexes, constraint files, the CA bundle),
# bind-mounted read-only. None of it is written into the image.
#
# The image itself is rebuilt on every run, so it always holds the working tree's sources; the
# tag then moves to the new image and the one it replaces is removed. Prints the build time, the
# image size and the largest packages of its virtualenv (/opt/henge). Runs one at a time per
# machine (a lock), needs root (debootstrap, and buildah's chroot isolation without user
# namespaces). buildah picks its storage driver as configured (STORAGE_DRIVER is honoured; with
# nothing set it keeps the driver its storage already uses, else overlay where the kernel has it).
set -euo pipefail
cd "$(dirname "$0")/.."

base_only=
if [ "${1:-}" = "--base-only" ]; then
  base_only=1
  shift
fi
image=${1:-${HENGE_IMAGE:-localhost/henge:test}}
base=${HENGE_BASE_IMAGE:-localhost/henge-python-base:bookworm}
mirror=${HENGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# RUN steps share the host's network and need no OCI runtime (runc/crun) under chroot isolation.
export BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}

say() { echo "ensure-image: $*" >&2; }
die() { echo "error: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  die "building the image needs root (debootstrap and buildah's chroot isolation)"
fi
# The project's interpreter reads pip's settings and buildah's JSON; any Python 3 will do.
if [ -x .venv/bin/python ]; then
  py=.venv/bin/python
elif command -v python3 >/dev/null 2>&1; then
  py=python3
else
  die "no Python 3 on this machine (.venv/bin/python or python3)"
fi

# Concurrent runs (pytest workers, two shells, the base started early by `make test`) would race
# on the installs, the base and the tag.
exec 9>/var/lock/henge-ensure-image.lock
flock 9

# ---- tools -----------------------------------------------------------------------------------

if ! command -v buildah >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 \
    || die "buildah or debootstrap is missing and apt-get is not available to install them"
  say "installing Debian's buildah and debootstrap"
  # (waiting for dpkg's lock: the browser tests may be installing Chromium meanwhile)
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq >&2 || die "apt-get update failed"
  # (no recommends: runc/crun and fuse-overlayfs are not used by root with chroot isolation)
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends buildah debootstrap >&2 \
    || die "apt-get install buildah debootstrap failed"
fi


# Whatever this run leaves behind on the way out: working containers, scratch folders.
containers=()
scratch=()
cleanup() {
  local ctr dir mnt
  for ctr in "${containers[@]+"${containers[@]}"}"; do
    buildah rm "$ctr" >/dev/null 2>&1 || true
  done
  for dir in "${scratch[@]+"${scratch[@]}"}"; do
    # debootstrap mounts /proc and friends inside its target: an interrupted run may leave them.
    for mnt in $(awk -v d="$dir" 'index($2, d"/") == 1 {print $2}' /proc/mounts | sort -r); do
      umount -l "$mnt" 2>/dev/null || true
    done
    rm -rf --one-file-system "$dir"
  done
}
trap cleanup EXIT

has_image() { buildah images --quiet "$1" >/dev/null 2>&1; }

# ---- the base: a stand-in for python:3.11-slim-bookworm ---------------------------------------

if has_image "$base"; then
  say "base $base is there (built $(buildah images --format '{{.CreatedAt}}' "$base" | sed -n 1p))"
else
  say "building the base $base with debootstrap from $mirror (once per machine)"
  started=$SECONDS
  root=$(mktemp -d /var/tmp/henge-base.XXXXXX)
  scratch+=("$root")
  # ca-certificates as in the slim image; python-is-python3: the Dockerfile runs `python -m venv`.
  debootstrap --variant=minbase --include=ca-certificates,python3,python3-venv,python-is-python3 \
    bookworm "$root" "$mirror" >"$root.log" 2>&1 \
    || { tail -n 20 "$root.log" >&2; rm -f "$root.log"; die "debootstrap failed"; }
  rm -f "$root.log"
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  fi
  # The package caches are no part of a base image (the slim image has none either).
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log
  for tool in python groupadd useradd; do
    chroot "$root" sh -c "command -v $tool" >/dev/null || die "the base has no $tool"
  done
  chroot "$root" python -c 'import ensurepip, venv' || die "the base's python cannot make a venv"

  ctr=$(buildah from scratch)
  containers+=("$ctr")
  mnt=$(buildah mount "$ctr")
  cp -a "$root/." "$mnt/"
  buildah umount "$ctr" >/dev/null
  buildah config \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 \
    --cmd python3 \
    --label org.opencontainers.image.description="Debian bookworm minbase with Python 3.11 (debootstrap), standing in for python:3.11-slim-bookworm" \
    "$ctr"
  buildah commit --quiet --rm "$ctr" "$base" >/dev/null
  containers=()
  say "base built in $((SECONDS - started)) s"
fi
if [ -n "$base_only" ]; then
  exit 0
fi

# ---- pip's settings on this machine, for the build ---------------------------------------------

# Everything pip needs is bind-mounted under root's home, /root, for the RUN steps: a mount point
# that does not exist in the image would stay behind in it as an empty file or folder (buildah
# creates it in the layer), and /root exists in the base, so only it is mounted there; the other
# mount points are created inside the mounted folder, on this machine.
work=$(mktemp -d /var/tmp/henge-image.XXXXXX)
scratch+=("$work")
home="$work/root"
mkdir -p "$home/.config/pip"
volumes=(--volume "$home:/root")
if "$py" -m pip --version >/dev/null 2>&1; then
  listing=$("$py" -m pip config list 2>/dev/null || true)
  # Writes ~/.config/pip/pip.conf for the build from `pip config list`: one [section] per pip
  # section, and the PIP_* variables (":env:"), which override every section in pip, in [global]
  # with their keys taken out of the others. The local paths the settings name (for a file://
  # "simple" index, the folder above it, where its links point) are moved to /root/.host/N-NAME,
  # and printed as "host path<TAB>path in the build" for the bind mounts.
  mounts=$("$py" - "$home" "$listing" <<'PY'
import ast, configparser, os, sys

home, listing = sys.argv[1], sys.argv[2]
sections: dict[str, dict[str, str]] = {}
overrides: dict[str, str] = {}
for line in listing.splitlines():
    key, sep, raw = line.partition("=")
    if not sep:
        continue
    section, _, name = key.rpartition(".")
    name = name.replace("_", "-")
    try:
        value = str(ast.literal_eval(raw))
    except (ValueError, SyntaxError):
        value = raw
    if section == ":env:":
        overrides[name] = value
    elif section:
        sections.setdefault(section, {})[name] = value
for name, value in overrides.items():
    for values in sections.values():
        values.pop(name, None)
    sections.setdefault("global", {})[name] = value

mounts: dict[str, str] = {}


def moved(token: str) -> str:
    url = token.startswith("file://")
    path = os.path.normpath(token[len("file://"):] if url else token)
    if not path.startswith("/") or path == "/" or not os.path.exists(path):
        return token
    source = os.path.dirname(path) if url and os.path.basename(path) == "simple" else path
    if source not in mounts:
        target = f"/root/.host/{len(mounts)}-{os.path.basename(source)}"
        placeholder = os.path.join(home, target[len("/root/"):])
        if os.path.isdir(source):
            os.makedirs(placeholder)
        else:
            os.makedirs(os.path.dirname(placeholder), exist_ok=True)
            open(placeholder, "w").close()
        mounts[source] = target
    inside = mounts[source] + path[len(source):]
    return "file://" + inside if url else inside


config = configparser.ConfigParser(interpolation=None)
for section, values in sections.items():
    config[section] = {name: " ".join(map(moved, value.split())) for name, value in values.items()}
with open(os.path.join(home, ".config", "pip", "pip.conf"), "w") as handle:
    config.write(handle)
for source, target in mounts.items():
    print(f"{source}\t{target}")
PY
  )
  while IFS=$'\t' read -r source target; do
    [ -n "$source" ] && volumes+=(--volume "$source:$target:ro")
  done <<<"$mounts"
  say "pip settings for the build from '$py -m pip config list':" \
      "$(grep -c ' = ' "$home/.config/pip/pip.conf" || true) values, local paths:" \
      "$(cut -f1 <<<"$mounts" | tr '\n' ' ')"
else
  say "no pip on this machine to read settings from: the build's pip uses its defaults"
fi

# ---- the image --------------------------------------------------------------------------------

previous=$(buildah images --quiet --no-trunc "$image" 2>/dev/null | sed -n 1p || true)
say "building $image from Dockerfile (PYTHON_IMAGE=$base)"
started=$SECONDS
log="$work/build.log"
if ! buildah bud --pull=never --network host \
    --build-arg "PYTHON_IMAGE=$base" \
    "${volumes[@]}" \
    --tag "$image" --file Dockerfile . >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  die "buildah bud failed (the last 40 lines of its output are above)"
fi
build_s=$((SECONDS - started))
current=$(buildah images --quiet --no-trunc "$image" | sed -n 1p)
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then
  # The tag moved on: the replaced image would only fill the disk (kept while a container uses it).
  buildah rmi "$previous" >/dev/null 2>&1 || true
fi

# ---- what the image holds ---------------------------------------------------------------------

size=$(buildah images --format '{{.Size}}' "$image" | sed -n 1p)
ctr=$(buildah from --pull=never "$image")
containers+=("$ctr")
mnt=$(buildah mount "$ctr")
site=$(echo "$mnt"/opt/henge/lib/python3*/site-packages)
[ -d "$site" ] || die "the image has no /opt/henge/lib/python3*/site-packages"

echo "image: $image"
id=${current#sha256:}
echo "image id: ${id:0:12}"
echo "build: ${build_s} s"
echo "size: $size (buildah images); root file system $(du -sh "$mnt" | cut -f1)"
echo "virtualenv /opt/henge: $(du -sh "$mnt/opt/henge" | cut -f1)," \
     "of which __pycache__: $(find "$mnt/opt/henge" -name __pycache__ -type d -prune -print0 \
       | du -sch --files0-from=- | sed -n '$p' | cut -f1)"
echo "largest packages in /opt/henge/${site#"$mnt/opt/henge/"}:"
# (awk, not head: under pipefail a reader that stops early fails the pipeline with SIGPIPE)
du -sk "$site"/*/ | sort -rn \
  | awk 'NR <= 15 {n = split($2, part, "/"); printf "  %8.1f MiB  %s\n", $1 / 1024, part[n - 1]}'
buildah umount "$ctr" >/dev/null
