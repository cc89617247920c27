#!/bin/bash
# With three `yes > /dev/null` beside it, runs `regent check` and `regent
# test` on every example ROUNDS times for each binary, the binaries
# alternating run by run so both see the same load, regent at nice NICE;
# counts runs that fail (exit != 0) and runs that report a time-out.
# Usage: load.sh ROUNDS NICE BASE NEW
rounds=$1; niceness=$2; shift 2
cd "$(dirname "$0")/../.."
pids=()
for k in 1 2 3; do yes > /dev/null & pids+=($!); done
declare -A runs failed timeouts
for ((r=0; r<rounds; r++)); do
  for ex in examples/*; do
    for cmd in check test; do
      for regent in "$@"; do
        out=$(nice -n "$niceness" "$regent" $cmd "$ex" 2>&1); rc=$?
        runs[$regent]=$((${runs[$regent]:-0}+1))
        [ $rc -ne 0 ] && failed[$regent]=$((${failed[$regent]:-0}+1))
        if grep -q "time limit" <<<"$out"; then
          timeouts[$regent]=$((${timeouts[$regent]:-0}+1))
          echo "$regent $cmd $ex: $(grep -m1 'time limit' <<<"$out" | cut -c1-240)" >&2
        fi
      done
    done
  done
done
for p in "${pids[@]}"; do kill "$p"; done
for regent in "$@"; do
  echo "$regent nice=$niceness: ${runs[$regent]} runs, ${failed[$regent]:-0} failed, ${timeouts[$regent]:-0} reported a time-out"
done
