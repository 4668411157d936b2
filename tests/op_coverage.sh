#!/usr/bin/env bash
# Usage: op_coverage.sh XHAL_INFO XHAL_CONFORMANCE XHAL_BENCH
# Every op of the op table (xhal-info --ops) has a conformance test named after it (rms_norm ->
# RmsNorm) and a benchmark case (rms_norm/...): a new op cannot land without either.
set -euo pipefail
info=$1 conformance=$2 bench=$3
tests=$("$conformance" --gtest_list_tests | sed -n 's/^  \([A-Za-z0-9]*\).*/\1/p' | sort -u)
cases=$("$bench" --benchmark_list_tests 2>/dev/null | sed 's#/.*##' | sort -u)
missing=0
while read -r op; do
  camel=$(sed -E 's/(^|_)([a-z])/\U\2/g' <<<"$op")
  grep -qx "$camel" <<<"$tests" || { echo "$op: no conformance test named $camel"; missing=1; }
  grep -qx "$op" <<<"$cases" || { echo "$op: no xhal-bench case named $op/..."; missing=1; }
done < <("$info" --ops | sed 's/(.*//')
[ "$missing" -eq 0 ] && echo "every op of the op table has a conformance test and a benchmark case"
exit "$missing"
