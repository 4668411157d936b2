#!/usr/bin/env bash
# Usage: expect_failure.sh REGEX COMMAND [ARGS...]
# Passes when COMMAND exits non-zero (but was not killed by a signal) and its output matches REGEX.
regex=$1
shift
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ "$status" -eq 0 ]; then echo "expected a non-zero exit, got 0"; exit 1; fi
if [ "$status" -ge 128 ]; then echo "killed by signal $((status - 128))"; exit 1; fi
if ! grep -Eq -- "$regex" <<<"$output"; then echo "output does not match: $regex"; exit 1; fi
echo "failed as expected (exit $status)"
