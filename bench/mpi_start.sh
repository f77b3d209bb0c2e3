#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# MPI_Init and MPI_Comm_spawn under Open MPI's default point-to-point choice and with ob1 named (what `malleo run`
# does on a host without InfiniBand or Omni-Path devices), interleaved round by round; medians over all rounds
# (docs/performance.md, "Machines"; docs/notes/open-mpi-pml.md).
#
#	bench/mpi_start.sh [ROUNDS [SPAWNS]]	(needs build/bench/mpi_start; BUILD=dir for another build directory)
set -euo pipefail
rounds=${1:-5}
spawns=${2:-5}
program=${BUILD:-build}/bench/mpi_start
[[ -x $program ]] || { echo "mpi_start.sh: $program not built (meson compile -C ${BUILD:-build})" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
	for setting in default ob1; do
		mca=()
		[[ $setting == ob1 ]] && mca=(--mca pml ob1)
		env -u OMPI_MCA_pml mpirun.openmpi --oversubscribe "${mca[@]}" -n 1 "$program" "$spawns" >>"$out/$setting"
	done
done
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "| Open MPI pml | MPI_Init s | its CPU s | MPI_Comm_spawn of 2 s | a child's MPI_Init s | its CPU s | runs, spawns |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for setting in default ob1; do
	f=$out/$setting
	printf '| %s | %s | %s | %s | %s | %s | %d, %d |\n' "$setting" \
		"$(awk '/^init/ {print $2}' "$f" | median)" "$(awk '/^init/ {print $5}' "$f" | median)" \
		"$(awk '/^spawn/ {print $2}' "$f" | median)" "$(awk '/^spawn/ {print $6}' "$f" | median)" \
		"$(awk '/^spawn/ {print $9}' "$f" | median)" "$(grep -c '^init' "$f")" "$(grep -c '^spawn' "$f")"
done
