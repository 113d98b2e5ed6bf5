#!/usr/bin/env bash
# viz_no_display.sh: without a display, cplab-viz must fail at once with a message naming the fixes
# (xvfb-run, DISPLAY) and a non-zero exit: never a crash or a hang.   viz_no_display.sh CPLAB_VIZ
set -uo pipefail
err=$(env -u DISPLAY -u WAYLAND_DISPLAY timeout 20 "$1" --view ring 2>&1 >/dev/null)
rc=$?
echo "$err"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -lt 128 ] || { echo "FAIL: exit code $rc (want a clean non-zero exit)"; exit 1; }
grep -q "xvfb-run" <<<"$err" && grep -q "DISPLAY" <<<"$err" || { echo "FAIL: the message does not name xvfb-run and DISPLAY"; exit 1; }
echo "ok: exit $rc with the fixes named"
