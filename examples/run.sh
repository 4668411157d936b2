#!/usr/bin/env bash
# The README's main command: installs missing Debian packages, builds, then shows what xhal sees
# (xhal-info), runs a Llama-style decoder layer (llama_block) and a short benchmark on the default
# backend (BACKEND_TYPE, default auto).
set -euo pipefail
cd "$(dirname "$0")/.."
.ci/install-deps.sh
build=${XHAL_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build"
"$build/bin/xhal-info"
"$build/bin/llama_block"
"$build/bin/xhal-bench" --quick
