#!/usr/bin/env bash
# Usage: install_consumer.sh BUILD_DIR CONSUMER_SOURCE WORK_DIR
# Installs xhal from BUILD_DIR into WORK_DIR/prefix, then configures, builds and runs the consumer
# project with find_package(xhal) against that prefix only.
set -euo pipefail
build=$1 source=$2 work=$3
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$source" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
# The installed libxhal finds its plugins beside itself; nothing from the build tree is used.
env -u XHAL_PLUGIN_PATH "$work/build/xhal_consumer"
