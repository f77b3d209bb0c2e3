#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, builds and runs the whole test suite. Pass meson test options through,
# e.g. `scripts/test.sh --suite fast` for the quick tests alone.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec meson test -C build --print-errorlogs --num-processes 2 "$@"
