#!/usr/bin/env bash
# viz_render_check.sh: renders one cplab-viz view headless under a virtual X server and checks the
# PNG (size, not blank).   viz_render_check.sh CPLAB_VIZ PNG_CHECK OUT.png WIDTH HEIGHT [cplab-viz args...]
set -euo pipefail
viz=$1 check=$2 out=$3 w=$4 h=$5
shift 5
rm -f "$out"
xvfb-run -a -s "-screen 0 $((w + 64))x$((h + 64))x24" "$viz" --headless --out "$out" --size "${w}x${h}" "$@"
"$check" "$out" "$w" "$h"
