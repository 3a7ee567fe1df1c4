#!/usr/bin/env bash
# Regenerates the msprobe 26 fixtures beside this script (see PROVENANCE.md). Needs a Python with
# torch (CPU) and mindstudio-probe installed; writes its work files under $WORK (default: a temp dir).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d)}
cd "$WORK"
for mode in statistics:md5 statistics:statistics tensor:-; do
    task=${mode%%:*}; summary=${mode##*:}; name=$task; [ "$summary" = md5 ] && name=md5
    python "$HERE/make_dumps.py" "$name-bench" "$task" L1 bench "$summary"
    python "$HERE/make_dumps.py" "$name-target" "$task" L1 target "$summary"
    msprobe compare -tp "$name-target/dump/step0" -gp "$name-bench/dump/step0" -o "out-$name"
    msprobe compare -tp "$name-target/dump/step0" -gp "$name-bench/dump/step0" -o "out-$name-xlsx" --xlsx
    # First-difference analysis (-da) looks for rank<N> folders: a single-process dump sits in
    # proc<pid>, so each run's folder is linked in as rank0.
    for run in bench target; do
        mkdir -p "$name-$run-ranks" && ln -sfn "$(ls -d "$PWD/$name-$run"/dump/step0/proc*)" "$name-$run-ranks/rank0"
    done
    mkdir -p "out-$name-da"
    msprobe compare -tp "$name-target-ranks" -gp "$name-bench-ranks" -o "out-$name-da" -da
done
# msprobe names its results compare_result_<proc>_<timestamp>.<ext>: keep one of each, renamed.
for name in statistics md5 tensor; do
    cp out-$name/compare_result_*.csv "$HERE/$name.csv"
    cp out-$name-xlsx/compare_result_*.xlsx "$HERE/$name.xlsx"
done
# -da compares by statistics whatever the dump held, so tensor mode's -da files equal statistics mode's.
for name in statistics md5; do
    cp out-$name-da/compare_result_rank0_*.json "$HERE/${name}_first_diff.json"
    cp out-$name-da/diff_analyze_*.json "$HERE/${name}_diff_analyze.json"
done
cp statistics-bench/dump/step0/proc*/dump.json "$HERE/statistics_bench_dump.json"
# The other files a dump writes (with extra_info on; construct.json at level mix).
python "$HERE/make_dumps.py" mix-bench statistics mix bench statistics true
cp mix-bench/dump/step0/proc*/stack.json "$HERE/mix_bench_stack.json"
cp mix-bench/dump/step0/proc*/construct.json "$HERE/mix_bench_construct.json"
