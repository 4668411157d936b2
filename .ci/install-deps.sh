#!/usr/bin/env bash
# Installs the Debian packages xhal needs to build and test, when any is missing. hipcc and the HIP
# runtime's headers build the hip plugin (it compiles for AMD GPUs; none is needed to build it),
# with rocPRIM for its device sort; clang with its fuzzer runtime and OpenMP builds the fuzz target
# that .ci/run runs; clang-format, and python3 with shellcheck run .ci/lint.
set -euo pipefail
packages=(build-essential cmake ninja-build libfmt-dev libspdlog-dev libdlpack-dev libgtest-dev
          libbenchmark-dev libopenmpi-dev openmpi-bin hipcc libamdhip64-dev libhwy-dev
          libopenblas-openmp-dev libdnnl-dev librocprim-dev nlohmann-json3-dev clang libclang-rt-dev libomp-dev
          clang-format shellcheck python3 binutils)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd=sudo
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
