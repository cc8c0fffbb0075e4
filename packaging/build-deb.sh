#!/usr/bin/env bash
# Build the Debian package: bash packaging/build-deb.sh  ->  dist/cachewise_VERSION_amd64.deb
#
# 1. Fetches the wheels the package bundles (packaging/debian/bundle.txt, pinned) and builds
#    cachewise's own wheel into build/deb/wheelhouse, and the build-only tools
#    (packaging/debian/build-tools.txt) into build/deb/buildtools: the only step that uses the
#    network (PyPI; pip's cache makes it quick the second time).
# 2. Builds the package with debhelper (packaging/debian/rules) offline from those wheels.
# Needs dpkg-dev, debhelper and python3-pip (packaging/deb-packages.txt; test.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/common.sh

for tool in dpkg-buildpackage dh; do
  if ! command -v "$tool" >/dev/null; then
    echo "build-deb.sh: $tool is missing; install the packages in packaging/deb-packages.txt" \
         "(sudo apt-get install dpkg-dev debhelper python3-pip) and run again." >&2
    exit 1
  fi
done
venv_python

version=$(.venv/bin/python -c 'import re,sys; print(re.search(r"__version__ = \"(.+)\"", open("cachewise/__init__.py").read())[1])')
changelog=$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)
if [ "$version" != "$changelog" ]; then
  echo "build-deb.sh: cachewise/__init__.py says $version but packaging/debian/changelog says $changelog;" \
       "add a changelog entry (dch -c packaging/debian/changelog -v $version) and run again." >&2
  exit 1
fi

build=build/deb
tree=$build/cachewise-$version
rm -rf "$build"
mkdir -p "$tree" "$build/wheelhouse" "$build/buildtools" dist
.venv/bin/python -m pip download --quiet --only-binary=:all: --no-deps -d "$build/wheelhouse" -r packaging/debian/bundle.txt
.venv/bin/python -m pip wheel --quiet --no-deps -w "$build/wheelhouse" .
.venv/bin/python -m pip wheel --quiet --no-deps -w "$build/buildtools" -r packaging/debian/build-tools.txt
# The source tree debhelper works in: the project's files and the debian/ directory.
tar -c --exclude=__pycache__ cachewise advisor screens recipes pyproject.toml README.md LICENSE | tar -x -C "$tree"
cp -r packaging/debian "$tree/debian"
cp -r packaging/prometheus "$tree/debian/prometheus"  # the alert rules and dashboard debian/rules installs
(cd "$tree" && WHEELS="$(cd ../wheelhouse && pwd)" TOOLS="$(cd ../buildtools && pwd)" \
  dpkg-buildpackage -b -us -uc --no-sign >../build.log 2>&1) || {
  tail -40 "$build/build.log" >&2
  echo "build-deb.sh: dpkg-buildpackage failed; the whole log is $build/build.log. Nothing was installed." >&2
  exit 1
}
deb=$(ls "$build"/cachewise_"$version"_*.deb)
cp "$deb" dist/
echo "dist/$(basename "$deb")"
