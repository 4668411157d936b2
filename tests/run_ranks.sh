#!/usr/bin/env bash
# Runs `ranks` copies of a program, one per rank, with RANK, WORLD_SIZE and a fresh
# XHAL_STORE=file:<path>; fails when any copy fails. Usage: run_ranks.sh <ranks> <program> [args...]
set -u
ranks=$1
shift
store=$(mktemp -u "${TMPDIR:-/tmp}/xhal-store.XXXXXX")
pids=()
for ((r = 0; r < ranks; ++r)); do
  RANK=$r WORLD_SIZE=$ranks XHAL_STORE=file:$store "$@" > >(sed "s/^/[rank $r] /") 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
rm -f "$store"
exit $status
