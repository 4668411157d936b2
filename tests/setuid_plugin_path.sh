#!/usr/bin/env bash
# Usage: setuid_plugin_path.sh XHAL_INFO PLUGIN_DIR WORK_DIR [sanitized]
# A setuid program must ignore XHAL_PLUGIN_PATH (read with secure_getenv): a copy of xhal-info
# owned by nobody with the setuid bit, run by root (so its effective user differs from the real
# one), must not list the plugins of PLUGIN_DIR, which the same program run plainly lists.
set -u
info=$1 plugins=$2 work=$3
if [ "${4:-}" = sanitized ]; then
  # LeakSanitizer cannot stop a setuid process's threads and ignores ASAN_OPTIONS there; the
  # build without sanitizers runs this test.
  echo "setuid test skipped: the sanitizer build's LeakSanitizer cannot run in a setuid process"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1; then
  echo "setuid test skipped: needs root and a 'nobody' user"
  exit 0
fi
rm -rf "$work" && mkdir -p "$work" && cp "$info" "$work/xhal-info" && cp "$(command -v id)" "$work/id" || exit 1
chown nobody "$work/xhal-info" "$work/id" && chmod 4755 "$work/xhal-info" "$work/id" || exit 1
if [ "$("$work/id" -u)" != "$(id -u nobody)" ]; then
  echo "setuid test skipped: this file system ignores the setuid bit"
  exit 0
fi
plain=$(XHAL_PLUGIN_PATH=$plugins "$info" 2>&1)
if ! grep -q "libxhal_wrongabi.so" <<<"$plain"; then
  printf '%s\n' "$plain"
  echo "the plain run does not list $plugins/libxhal_wrongabi.so: the check below would prove nothing"
  exit 1
fi
setuid=$(XHAL_PLUGIN_PATH=$plugins "$work/xhal-info" 2>&1)
status=$?
printf '%s\n' "$setuid"
if [ "$status" -ne 0 ] || ! grep -Eq "cpu +loaded" <<<"$setuid"; then
  echo "the setuid run failed or has no cpu backend (exit $status)"
  exit 1
fi
if grep -q "libxhal_wrongabi.so" <<<"$setuid"; then
  echo "the setuid run read XHAL_PLUGIN_PATH"
  exit 1
fi
echo "XHAL_PLUGIN_PATH ignored by the setuid program"
