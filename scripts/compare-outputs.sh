#!/usr/bin/env bash
# compare-outputs.sh BEFORE_DIR AFTER_DIR: diff two snapshots of scripts/snapshot-outputs.sh with
# the timings masked (the demo's time column, "time: ..." lines, "seconds" values, "N.NN s|ms|us").
# Prints every other difference and exits 1 if there is one.
set -u
norm() { sed -E 's|^Usage: [^ ]*/cplab |Usage: cplab |; s/ [0-9]+\.[0-9]+ +(ok|FAILED)$/ TIME \1/; s/^time: .*/time: TIME/; s/"(reference_)?seconds": [-0-9.e+]+/"\1seconds": TIME/; s/[0-9]+\.[0-9]+ (s|ms|us)\b/TIME \1/g' "$1"; }
rc=0
for f in $(cd "$1" && ls); do
  if [ ! -e "$2/$f" ]; then echo "only in $1: $f"; rc=1; continue; fi
  if ! diff -q <(norm "$1/$f") <(norm "$2/$f") > /dev/null; then echo "== $f"; diff <(norm "$1/$f") <(norm "$2/$f"); rc=1; fi
done
for f in $(cd "$2" && ls); do [ -e "$1/$f" ] || { echo "only in $2: $f"; rc=1; }; done
exit $rc
