#!/usr/bin/env bash
# fuzz-run.sh: runs the staged fuzz targets (scripts/fuzz-bundle.sh puts this file in .fuzz/ as
# fuzz-run) as parallel libFuzzer processes for a fixed time, then writes under $OUT:
#   summary.txt        total executions (the sum over every process of libFuzzer's final
#                      stat::number_of_executed_units), per target, crashes/leaks/timeouts/OOMs
#   jobs.tsv           one row per process run: target, job, run, seconds, executions, exit status
#   crashes.tar.gz     every artifact (crash-*, leak-*, timeout-*, oom-*, slow-unit-* are not kept)
#   logs.tar.gz        every process's log
#   corpus-new.tar.gz  the inputs the run added to each target's corpus (when it is under 16 MiB)
# The last line printed is the summary's.  Exit status 0 when nothing was found, 1 otherwise.
#
#   JOBS=16 TIME=480 ./fuzz-run            (defaults: JOBS = nproc, TIME = 480 s, OUT = ./out)
#   FRONTEND_JOBS=K                        processes on fuzz_frontend (default JOBS/2); the rest
#                                          run fuzz_backend
#   UNIT_TIMEOUT=S                         libFuzzer's -timeout (default 60: a kernel with 128x128
#                                          fp8 dots takes LLVM seconds for sm_80 under ASan; a real
#                                          hang still ends as a timeout-* artifact)
#   MAX_LEN=N                              libFuzzer's -max_len (default 16384: the seeds go up to
#                                          130 KB; longer inputs run slower and are truncated)
# Each process is `bin/fuzz_T -max_total_time=... -max_len=16384 -timeout=60 -rss_limit_mb=4096 -dict=tile.dict
# work/corpus-T seeds`: the processes of one target share one writable corpus (libFuzzer reloads
# it, so what one finds the others use) over the read-only seeds.  A process that stops early (it
# found something) is started again for the time left, so every core fuzzes for the whole time.
# Speed, measured on the shared 2-core machine (2026-12-02, one process per target): fuzz_frontend
# about 290 executions/s, fuzz_backend about 90/s once its seeds are loaded (each compiles for
# sm_90a and sm_80 through LLVM); a 16-core call of 480 s should give a few million in all: read
# summary.txt's TOTAL and repeat to reach a target.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
jobs=${JOBS:-$(nproc)}
total=${TIME:-480}
fe_jobs=${FRONTEND_JOBS:-$((jobs / 2))}
be_jobs=$((jobs - fe_jobs))
out=${OUT:-$here/out}
work=${WORK:-$here/work}
mkdir -p "$out"
rm -rf "$work"
mkdir -p "$work/bin" "$work/logs" "$work/crashes" "$work/corpus-frontend" "$work/corpus-backend"

# the binaries travel compressed (the bundle must fit 64 MiB)
for t in frontend backend; do
  if [ -f "$here/bin/fuzz_$t.gz" ]; then gzip -dc "$here/bin/fuzz_$t.gz" > "$work/bin/fuzz_$t"
  else cp "$here/bin/fuzz_$t" "$work/bin/fuzz_$t"; fi
  chmod +x "$work/bin/fuzz_$t"
done
if ldd "$work/bin/fuzz_backend" | grep -qi 'libLLVM\|not found'; then
  echo "fuzz-run: fuzz_backend needs libraries this machine lacks:" >&2
  ldd "$work/bin/fuzz_backend" >&2
  exit 2
fi
# no llvm-symbolizer where LLVM is not installed: addr2line (binutils) names the frames
export ASAN_OPTIONS=${ASAN_OPTIONS:-allow_addr2line=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:allow_addr2line=1}

start=$(date +%s)
deadline=$((start + total))

# one job: runs its target until the deadline, restarting it when it stops early
job() {
  local t=$1 j=$2 run=0
  while :; do
    local now left
    now=$(date +%s)
    left=$((deadline - now))
    [ "$left" -ge 5 ] && [ "$run" -lt "${MAX_RESTARTS:-20}" ] || break   # a seed that crashes at once: 20 tries
    local log="$work/logs/$t-j$j-r$run.log" t0=$now rc
    "$work/bin/fuzz_$t" -max_total_time="$left" -max_len="${MAX_LEN:-16384}" -timeout="${UNIT_TIMEOUT:-60}" -rss_limit_mb=4096 -print_final_stats=1 \
      -dict="$here/tile.dict" -artifact_prefix="$work/crashes/$t-j$j-r$run-" -seed=$((1000 * j + run + 1)) \
      "$work/corpus-$t" "$here/seeds" > "$log" 2>&1
    rc=$?
    # executions: the final stats; a process killed by a finding may not print them, then the
    # last status line ("#N ...") counts
    local n
    n=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    [ -n "$n" ] || n=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
    [ -n "$n" ] || n=0
    printf '%s\t%d\t%d\t%d\t%s\t%d\n' "$t" "$j" "$run" $(( $(date +%s) - t0 )) "$n" "$rc" >> "$work/jobs-$t-$j.tsv"
    run=$((run + 1))
    [ "$rc" -ne 0 ] || break   # a clean exit: the time is up
  done
}

echo "fuzz-run: $fe_jobs fuzz_frontend + $be_jobs fuzz_backend processes for ${total} s on $(nproc) cores"
pids=()
for ((j = 0; j < fe_jobs; j++)); do job frontend "$j" & pids+=($!); done
for ((j = 0; j < be_jobs; j++)); do job backend "$j" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done

printf 'target\tjob\trun\tseconds\texecutions\texit\n' > "$out/jobs.tsv"
cat "$work"/jobs-*.tsv >> "$out/jobs.tsv" 2>/dev/null
sum() { awk -F'\t' -v t="$1" 'NR > 1 && (t == "" || $1 == t) { s += $5 } END { printf "%d", s }' "$out/jobs.tsv"; }
nart=$(find "$work/crashes" -type f ! -name '*slow-unit-*' | wc -l)
find "$work/crashes" -type f -name '*slow-unit-*' -delete
{
  echo "fuzz-run: $(date -u +%FT%TZ), ${total} s, $fe_jobs + $be_jobs processes, $(nproc) cores"
  echo "executions fuzz_frontend: $(sum frontend)"
  echo "executions fuzz_backend:  $(sum backend)"
  for k in crash leak timeout oom; do
    echo "$k artifacts: $(find "$work/crashes" -type f -name "*-$k-*" | wc -l)"
  done
  echo "corpus: frontend $(ls "$work/corpus-frontend" | wc -l) inputs, backend $(ls "$work/corpus-backend" | wc -l) inputs"
  echo "TOTAL executions: $(sum '') ; findings: $nart"
} > "$out/summary.txt"
tar -C "$work" -czf "$out/crashes.tar.gz" crashes
tar -C "$work" -czf "$out/logs.tar.gz" logs
tar -C "$work" -czf "$work/corpus-new.tar.gz" corpus-frontend corpus-backend
if [ "$(stat -c %s "$work/corpus-new.tar.gz")" -lt $((16 << 20)) ]; then mv "$work/corpus-new.tar.gz" "$out/"; fi
cat "$out/summary.txt"
[ "$nart" -eq 0 ]
