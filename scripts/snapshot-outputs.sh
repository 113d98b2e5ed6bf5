#!/usr/bin/env bash
# snapshot-outputs.sh BUILD_DIR OUT_DIR: every output a refactor must leave unchanged, written to
# OUT_DIR, to be compared with scripts/compare-outputs.sh against a snapshot of another build.
#
# What it records: `cplab demo`; `cplab run` (table, --json, --trace and the --plan-only trace) for
# every mode x layout x mask x packing (padded, unpadded, none) x dtype at cp 4 with backward; a set
# of refused inputs (the messages); `cplab layout`, `plan`, `schedule`, `run --help`; every lesson
# program. JSON timing fields ("seconds", "reference_seconds", "dur_us") are blanked here; the
# compare script masks the timings printed as text.
# What it is not: a test (ctest runs the checks); it takes about 15 s on 2 cores.
# Used for issue 17 (one CP spec): snapshot a build of the old commit and of the new one, compare.
set -u
B=$1; O=$2; mkdir -p $O; C=$B/app/cplab
strip() { python3 -c '
import json,sys
def f(x):
    if isinstance(x,dict): return {k:(None if k in ("seconds","reference_seconds","dur_us","wall_s") else f(v)) for k,v in x.items()}
    if isinstance(x,list): return [f(v) for v in x]
    return x
print(json.dumps(f(json.load(sys.stdin)),indent=0,sort_keys=True))'; }
$C demo > $O/demo.txt 2>&1; echo "rc $?" >> $O/demo.txt
i=0
for mode in p2p allgather a2a a2a+p2p; do for lay in zigzag contiguous striped; do for c in "" --causal; do
 for pk in "" "--cu-seqlens 0,5,21,40 --pad" "--cu-seqlens 0,16,48,64"; do for dt in double float; do
  [ $mode = a2a+p2p ] && { [ $lay = zigzag ] || continue; [ -z "$pk" ] || continue; extra="--hcp 2,2"; } || extra=""
  [ -z "$pk" ] && seqopt="--seq 64" || seqopt=""
  [ $mode = a2a ] && hd="--heads 8 --kv-heads 4" || hd="--heads 4 --kv-heads 2"
  i=$((i+1)); n=$O/run$i
  args="run --mode $mode $extra --cp 4 $seqopt $hd --head-dim 8 --layout $lay $c $pk --dtype $dt --backward --seed $i"
  echo "$args" > $n.args
  $C $args --json --trace $n.trace.json > $n.json 2>$n.err; echo "rc $?" >> $n.err
  [ -s $n.json ] && strip < $n.json > $n.json.s && mv $n.json.s $n.json
  [ -s $n.trace.json ] && strip < $n.trace.json > $n.t && mv $n.t $n.trace.json
  $C $args > $n.txt 2>&1; echo "rc $?" >> $n.txt
  $C $args --plan-only --trace $n.plan.json > /dev/null 2>&1; [ -s $n.plan.json ] && strip < $n.plan.json > $n.t && mv $n.t $n.plan.json
 done; done; done; done; done
# bad inputs: messages must stay the same
while read -r a; do i=$((i+1)); $C $a > $O/bad$i.txt 2>&1; echo "rc $?" >> $O/bad$i.txt; done <<'B'
run --mode a2a+p2p --cp 4 --seq 64
run --mode a2a+p2p --cp 4 --seq 64 --hcp 3,2
run --mode a2a --cp 4 --seq 64 --heads 6
run --mode a2a --cp 4 --seq 64 --heads 8 --kv-heads 2
run --mode a2a --cp 4 --seq 64 --heads 8 --kv-heads 3 --replicate-kv
run --mode p2p --cp 4 --seq 1000
run --mode p2p --cp 4 --seq 64 --hcp 2,2
run --mode allgather --merge fold --cp 4 --seq 64
run --mode p2p --cp 4 --cu-seqlens 0,5,21,40
run --mode p2p --cp 4 --seq 64 --pad
run --mode bogus --cp 4 --seq 64
run --mode p2p --cp 0 --seq 64
run --mode p2p --cp 300 --seq 64
run --mode a2a+p2p --cp 4 --seq 64 --hcp 2,2 --layout striped
run --mode a2a+p2p --cp 4 --hcp 2,2 --cu-seqlens 0,8,64
run --mode a2a --cp 4 --seq 64 --heads 8 --kv-heads 2 --replicate-kv --json
run --mode p2p --cp 4 --seq 40 --cu-seqlens 0,5,21,40 --pad
run --mode p2p --cp 4 --seq 64 --cu-seqlens 0,8,64 --json
B
for sub in "layout --cp 4 --seq 32" "layout --cp 4 --seq 32 --layout striped" "plan" "schedule --lengths 100,200,300,4000 --ranks 4" "run --help" "layout --cp 4 --cu-seqlens 0,5,21,40 --pad"; do
  i=$((i+1)); $C $sub > $O/sub$i.txt 2>&1; echo "rc $?" >> $O/sub$i.txt; done
for l in $B/tutorials/[0-9][0-9]_*; do [ -x $l ] && { $l > $O/lesson_$(basename $l).txt 2>&1; echo "rc $?" >> $O/lesson_$(basename $l).txt; }; done
echo captured $i
