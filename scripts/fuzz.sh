#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fuzzes each target of fuzz/ for SECONDS (default 60) with libFuzzer, AddressSanitizer and UBSan (Debian's clang-14
# and libclang-rt-14-dev, installed by scripts/setup.sh). The targets are built here with clang into build-fuzz/
# (the rest of malleo needs no clang); each starts from its committed corpus (fuzz/corpus/NAME/, read-only here)
# and grows a working corpus in build-fuzz/corpus/NAME/. Prints executions and crashes per target; a crash leaves
# its input as build-fuzz/crash-NAME-*: add it to fuzz/corpus/NAME/ once fixed.
#   scripts/fuzz.sh [SECONDS] [TARGET...]        e.g. scripts/fuzz.sh 300 envelope
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(header envelope messages config)
CXX=${CXX_FUZZ:-clang++-14}
out=build-fuzz
mkdir -p "$out/obj"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
       -Iagent/include -Iagent/src)
wire=(agent/wire/message_codec.cpp agent/wire/message_schema.cpp agent/wire/command_check.cpp)
core=("${wire[@]}" agent/src/profile.cpp agent/src/config.cpp agent/src/endpoints.cpp)
objects() { # compiles each source once into build-fuzz/obj, prints the object files
  for src in "$@"; do
    obj="$out/obj/$(echo "$src" | tr / _).o"
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ agent/include/malleo/message.h -nt "$obj" ]; then
      "$CXX" "${flags[@]}" -c "$src" -o "$obj"
    fi
    echo "$obj"
  done
}
status=0
for t in "${targets[@]}"; do
  case $t in header|envelope) srcs=("${wire[@]}") ;; messages|config) srcs=("${core[@]}") ;;
    *) echo "fuzz.sh: unknown target '$t' (header, envelope, messages, config)" >&2; exit 2 ;; esac
  mapfile -t objs < <(objects "${srcs[@]}" "fuzz/fuzz_$t.cpp")
  "$CXX" "${flags[@]}" -fsanitize=fuzzer "${objs[@]}" -lfmt -o "$out/fuzz_$t"
  mkdir -p "$out/corpus/$t"
  log="$out/fuzz_$t.log"
  set +e
  "$out/fuzz_$t" -max_total_time="$seconds" -max_len=131072 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$out/crash-$t-" -print_final_stats=1 "$out/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  crashes=$(find "$out" -maxdepth 1 -name "crash-$t-*" | wc -l)
  echo "fuzz $t: $seconds s, $runs executions, exit $rc, $crashes crash files (log $log)"
  [ "$rc" -eq 0 ] || status=1
done
exit $status
