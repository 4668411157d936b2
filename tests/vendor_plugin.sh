#!/usr/bin/env bash
# Usage: vendor_plugin.sh BUILD_DIR SOURCE_DIR WORK_DIR CONFORMANCE_BINARY
# A backend from outside the tree: installs xhal from BUILD_DIR into WORK_DIR/prefix, builds
# examples/vendor_plugin against that prefix alone (find_package(xhal), xhal::plugin_api), then
# checks that BACKEND_TYPE=toyaccel xhal-info selects it and that `xhal_conformance --backend
# toyaccel` passes the ops it has and reports each other op as unsupported, by name.
set -euo pipefail
build=$1 source=$2 work=$3 conformance=$4
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$source/examples/vendor_plugin" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
export XHAL_PLUGIN_PATH=$work/build

info=$(BACKEND_TYPE=toyaccel "$work/prefix/bin/xhal-info")
if ! grep -q "^Default device: toyaccel:0" <<<"$info"; then
  echo "BACKEND_TYPE=toyaccel xhal-info did not select toyaccel:0:"; echo "$info"; exit 1
fi
echo "xhal-info: $(grep -E '^Default device' <<<"$info")"

# Red and green op by op: the run fails (toyaccel lacks attention), the table says where.
set +e
"$conformance" --backend toyaccel >"$work/conformance.log" 2>&1
status=$?
set -e
sed -n '/^conformance, op by op:/,$p' "$work/conformance.log"
[ "$status" -ne 0 ] || { echo "expected the ops toyaccel lacks to fail"; exit 1; }
expect() {  # expect OP RESULT: every dtype column of OP's row reads RESULT
  local row
  row=$(grep -E "^$1 " "$work/conformance.log" | tail -n 1)
  [ -n "$row" ] || { echo "no row for $1"; exit 1; }
  local cells
  read -r -a cells <<<"$row"
  for cell in "${cells[@]:1}"; do
    [ "$cell" = "$2" ] || { echo "$1: expected $2 in every column, got: $row"; exit 1; }
  done
}
for op in rms_norm swiglu rope linear; do expect "$op" pass; done
for op in attention attention_varlen paged_attention fused_add_rms_norm swiglu_packed; do expect "$op" unsupported; done
grep -q "xhal::ops::attention: unsupported on toyaccel: it has no attention kernel; its ops: \[rms_norm, swiglu, rope, linear\]" \
  "$work/conformance.log" || { echo "the unsupported error does not name the op and what toyaccel has"; exit 1; }
echo "toyaccel: its 4 ops pass, the others are unsupported by name"
