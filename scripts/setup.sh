#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what malleo needs on Debian 12 (as root) and builds it in ./build.
# Run by scripts/test.sh (everything the tests use) and by scripts/demo.sh as `setup.sh --demo` (what the build and
# the demo use, without the programs only some tests run); safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# The build and the demo.
packages=(
  meson ninja-build pkg-config cmake g++ gfortran
  libzmq3-dev cppzmq-dev nlohmann-json3-dev libhwloc-dev hwloc
  libspdlog-dev libfmt-dev doctest-dev libcli11-dev
  libopenmpi-dev openmpi-bin mpich libmpich-dev
  python3 python3-zmq python3-msgpack procps iproute2
  gnuplot-nox bash
)
# What tests find at run time, none of it at `meson setup` (so a build set up for the demo runs the whole suite
# once these are installed): a real Slurm (slurm), man pages rendered (installed_docs), a third-party MPI program
# to profile (third_party_*), clang and libFuzzer for scripts/fuzz.sh, clang-format for the format test
# (source_format).
if [ "${1:-}" != --demo ]; then
  packages+=(
    slurm-wlm munge
    groff-base man-db
    hpcc
    clang-14 libclang-rt-14-dev clang-format
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=debugoptimized
fi
ninja -C build
