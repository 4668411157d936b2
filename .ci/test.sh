#!/usr/bin/env bash
# The README's test command: installs missing Debian packages, configures, builds and runs the
# whole test suite with ctest. XHAL_BUILD_DIR and XHAL_CMAKE_ARGS select another build (CI uses
# them for the sanitizer build).
set -euo pipefail
cd "$(dirname "$0")/.."
.ci/install-deps.sh
build=${XHAL_BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${XHAL_BUILD_TYPE:-RelWithDebInfo} ${XHAL_CMAKE_ARGS:-}
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j2
