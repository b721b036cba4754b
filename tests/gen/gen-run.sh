#!/usr/bin/env bash
# gen-run.sh: random programs at scale on the GPU machine, from the bundle scripts/gpu-bundle.sh
# stages in .gpu/ (this file is .gpu/gen-run, tests/gen is .gpu/src/gen):
#   run(command="cd .gpu && MODE=interp SEEDS=1:10001 OUT=$OUT ./gen-run 2>&1 | tail -c 4000", carry=[".gpu"])
#   run(command="cd .gpu && MODE=device SEEDS=10001:20001 OUT=$OUT ./gen-run 2>&1 | tail -c 4000", carry=[".gpu"])
# MODE=interp: check.py's interpreter modes (-O0, -O3, the printed .tir, two random pass orders:
#   identical bits), the IR text round trip, and every ARCH_EVERY-th (default 10) program compiled
#   to PTX for sm_80, sm_89 and sm_90a;
# MODE=device: the same interpreter modes, then `tilec run --device --check` on the GPU (no PTX
#   compiles: the device run compiles a cubin for the GPU itself).
# JOBS programs at a time (default nproc); BUDGET seconds (default 500): no program starts after
# it, so one call stays within the device tool's 10 minutes; summary.txt says which seeds ran and
# the seed to start the next call from.
# Cost, measured on the 2-core machine (2026-12-02): about 0.4 s of CPU per program in interp
# mode (ARCH_EVERY 10), about 2.7 s in device mode (2.3 s of it the cubin: LLVM and ptxas, up to
# 7 s for the largest); on 16 cores 10,000 interp programs take about 250 s (one call), 10,000
# device programs about 1,700 s (four calls of BUDGET=500, each from the seed the last one's
# summary.txt names).
# Under $OUT: summary.txt (the counts), check.log (one line per failing program), findings.tar.gz
# (SEED/prog.tile, run.sh, finding.txt per failing program; run.sh needs TILEC=bin/tilec and
# CHECK_PY=src/gen/check.py).  Exit status 1 when a program failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here" || exit 1
export LD_LIBRARY_PATH="$here/lib:${LD_LIBRARY_PATH:-}"
export PATH="$here/bin:$PATH"
mode=${MODE:-device}
seeds=${SEEDS:-1:10001}
jobs=${JOBS:-$(nproc)}
budget=${BUDGET:-500}
out=${OUT:-$here/out}
mkdir -p "$out"
rm -rf "$out/findings"
case $mode in
  interp) extra=(--arch-every "${ARCH_EVERY:-10}") ;;
  device) extra=(--device --no-arch) ;;
  *) echo "gen-run: MODE is interp or device, not '$mode'" >&2; exit 2 ;;
esac
echo "gen-run: $mode, seeds $seeds, $jobs at a time, budget $budget s"
python3 src/gen/check.py --tilec "$here/bin/tilec" --seeds "$seeds" --jobs "$jobs" --time-budget "$budget" \
  --keep "$out/findings" --summary "$out/summary.txt" "${extra[@]}" > "$out/check.log" 2>&1
rc=$?
if [ -d "$out/findings" ]; then
  tar -C "$out" -czf "$out/findings.tar.gz" findings && rm -rf "$out/findings"
fi
tail -n 20 "$out/check.log"
echo "mode $mode" >> "$out/summary.txt"
cat "$out/summary.txt"
exit $rc
