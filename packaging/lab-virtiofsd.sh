#!/usr/bin/env bash
# The lab's guest reads the host's root file system (Python, the venv, lvm2, fio) through
# virtio-fs when the Rust virtiofsd is on the PATH given to virtme-ng, and through 9p
# otherwise. Under software emulation 9p costs about 4 ms per stat, so every `cachewise`
# command in the guest spent 10 s or more importing Python; with virtio-fs the same scenario
# ran in 106 s instead of 229 s (docs/lab.md). Debian 12 ships only QEMU's old C virtiofsd,
# which virtme-ng cannot drive, so build the Rust one from crates.io, pinned, into a cache
# directory that survives between runs (about 4 minutes once on 2 cores).
#
# Prints the directory to put on the PATH; prints nothing (and says why on stderr) when it
# cannot be built, and the lab then falls back to 9p.
set -euo pipefail
version=1.14.0
tools="${CACHEWISE_LAB_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/cachewise-lab}"
bin="$tools/virtiofsd-$version/bin"
if [ -x "$bin/virtiofsd" ]; then
  echo "$bin"
  exit 0
fi
cargo=$(command -v cargo || true)
[ -n "$cargo" ] || cargo=$(ls "$HOME/.cargo/bin/cargo" 2>/dev/null || true)
if [ -z "$cargo" ]; then
  echo "lab-virtiofsd.sh: no cargo (rustup) here, so the lab guest reads the host through 9p (about twice as slow)." >&2
  exit 0
fi
for lib in libseccomp libcap-ng; do
  if ! pkg-config --exists "$lib" 2>/dev/null && ! ls /usr/lib/*/"$lib".so >/dev/null 2>&1; then
    echo "lab-virtiofsd.sh: $lib development files are missing (packaging/lab-packages.txt lists them); using 9p." >&2
    exit 0
  fi
done
echo "lab-virtiofsd.sh: building virtiofsd $version from crates.io into $tools (once)" >&2
mkdir -p "$tools"
if "$cargo" install --quiet --locked virtiofsd --version "$version" --root "$tools/virtiofsd-$version" >&2; then
  echo "$bin"
else
  echo "lab-virtiofsd.sh: building virtiofsd failed (above); the lab guest reads the host through 9p." >&2
fi
