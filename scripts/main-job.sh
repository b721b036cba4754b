#!/usr/bin/env bash
# main-job.sh [BUILD_DIR]: the main job, on an existing build (scripts/main.sh builds first).
#   1. compiles every examples/*.tile and stdlib/*.tile to tile IR, an sm_90a cubin and a C
#      header with the cubin embedded, in one compilation per file (its kernels in parallel
#      threads: tilec -j, default the number of CPUs):
#        tilec FILE --emit=ir=BUILD_DIR/main-job/ir/{examples,stdlib}/NAME.tir,
#                          cubin=BUILD_DIR/main-job/cubin/{examples,stdlib}/NAME.cubin,
#                          header=BUILD_DIR/main-job/include/{examples,stdlib}/NAME.h --embed
#      (everything the job writes is under BUILD_DIR/main-job/, logs in BUILD_DIR/main-job/logs/:
#      the job never touches the CMake build folders of BUILD_DIR, such as BUILD_DIR/ir)
#   2. runs every example in the reference interpreter on random data, once per line of its
#      sidecar examples/NAME.run:
#        KERNEL [-D NAME=VALUE]... [--grid X,Y,Z] ARG...
#      becomes  tilec run examples/NAME.tile --kernel KERNEL [-D...] [--grid...] --interp ARG...
#      where an ARG is NAME=VALUE (a scalar) or NAME=TYPE[d0,d1,...] (a buffer of random data).
#      Blank lines and lines starting with # are skipped.
#   3. prints a table (file, kernel, ops in its IR, status, time); logs of failures follow it.
# Exit status 1 if anything failed (a file that does not compile, a run that fails, a
# missing .run sidecar), else 0.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" && pwd) || { echo "main-job.sh: no build folder '$1'" >&2; exit 1; }
tilec=$build/tools/tilec
[ -x "$tilec" ] || { echo "main-job.sh: $tilec not found: build first (scripts/main.sh)" >&2; exit 1; }
outdir=$build/main-job
irdir=$outdir/ir
logdir=$outdir/logs
cubindir=$outdir/cubin
incdir=$outdir/include
rm -rf "$outdir"
mkdir -p "$irdir/examples" "$irdir/stdlib" "$cubindir/examples" "$cubindir/stdlib" "$incdir/examples" \
  "$incdir/stdlib" "$logdir"
cd "$root" || exit 1

rows=()        # "file|kernel|ops|status|time"
failed_logs=()
nfail=0 nir=0 nrun=0

now() { printf '%s' "${EPOCHREALTIME/,/.}"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f ms", (b - a) * 1000 }'; }

# ops_of TIR SYMBOL: the number of ops in that kernel's body (its grid excluded)
ops_of() {
  awk -v sym="$2" '
    $1 == "kernel" { inside = ($2 == "@" sym); next }
    inside && /^}/ { inside = 0; next }
    inside && $0 !~ /^[[:space:]]*(}|\/\/|$)/ { n++ }
    END { print n + 0 }' "$1"
}
# kernels_of TIR: "SYMBOL SOURCE_NAME" per kernel
kernels_of() {
  sed -n -E 's/^kernel @("?)([^" (]+)\1 "([^"]*)".*/\2 \3/p' "$1"
}
fail() { # fail LOG: remember a failure
  nfail=$((nfail + 1)); failed_logs+=("$1")
}

# ---- 1. every .tile to IR
for src in examples/*.tile stdlib/*.tile; do
  [ -e "$src" ] || continue
  dir=${src%%/*}; name=$(basename "$src" .tile)
  tir=$irdir/$dir/$name.tir log=$logdir/$dir-$name.ir.log
  t0=$(now)
  cubin=$cubindir/$dir/$name.cubin header=$incdir/$dir/$name.h
  if "$tilec" "$src" --emit="ir=$tir,cubin=$cubin,header=$header" --embed --diagnostics-color=never \
       >"$log" 2>&1; then
    t=$(elapsed "$t0" "$(now)")
    while read -r sym _; do
      [ -n "$sym" ] || continue
      nir=$((nir + 1))
      rows+=("$src|$sym|$(ops_of "$tir" "$sym")|ir+cubin+h ok|$t")
    done < <(kernels_of "$tir")
  else
    rows+=("$src|-|-|FAIL (compile)|$(elapsed "$t0" "$(now)")"); fail "$log"
  fi
done

# ---- 2. every example in the interpreter
for src in examples/*.tile; do
  [ -e "$src" ] || continue
  name=$(basename "$src" .tile) sidecar=examples/$(basename "$src" .tile).run
  if [ ! -f "$sidecar" ]; then
    log=$logdir/$name.run.log
    echo "main-job.sh: $src has no sidecar $sidecar (a line per run: KERNEL ARG...)" >"$log"
    rows+=("$src|-|-|FAIL (no .run)|-"); fail "$log"; continue
  fi
  lineno=0
  while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    line=${line%%#*}
    read -r -a words <<<"$line"
    [ ${#words[@]} -gt 0 ] || continue
    kernel=${words[0]} opts=() args=()
    i=1
    while [ $i -lt ${#words[@]} ]; do
      w=${words[$i]}
      case $w in
        -D|--grid|--seed) opts+=("$w" "${words[$((i + 1))]:-}"); i=$((i + 2)); continue ;;
        -D*|--grid=*|--seed=*) opts+=("$w") ;;
        *) args+=("$w") ;;
      esac
      i=$((i + 1))
    done
    nrun=$((nrun + 1))
    log=$logdir/$name.$lineno.$kernel.log
    # the row's name (kernel and -D values) and the -D options alone, for the ops count
    spec=$kernel dopts=()
    for ((j = 0; j < ${#opts[@]}; j++)); do
      case ${opts[$j]} in
        -D) spec+=" ${opts[$((j + 1))]}"; dopts+=(-D "${opts[$((j + 1))]}"); j=$((j + 1)) ;;
        -D*) spec+=" ${opts[$j]#-D}"; dopts+=("${opts[$j]}") ;;
        --grid|--seed) j=$((j + 1)) ;;
      esac
    done
    ops=-
    spec_tir=$logdir/$name.$lineno.tir
    if "$tilec" "$src" --kernel "$kernel" "${dopts[@]}" --emit=ir -o "$spec_tir" >/dev/null 2>&1; then
      ops=$(kernels_of "$spec_tir" | { read -r sym _ && ops_of "$spec_tir" "$sym"; })
    fi
    {
      echo "\$ tilec run $src --kernel $kernel ${opts[*]} --interp ${args[*]}"
    } >"$log"
    t0=$(now)
    if "$tilec" run "$src" --kernel "$kernel" "${opts[@]}" --interp "${args[@]}" >>"$log" 2>&1; then
      status=ran
    else
      status="FAIL (rc $?)"; fail "$log"
    fi
    rows+=("$sidecar:$lineno|$spec|$ops|$status|$(elapsed "$t0" "$(now)")")
  done <"$sidecar"
done

# ---- 3. the table
echo
fmt='%-28s %-52s %5s  %-15s %10s\n'
# shellcheck disable=SC2059
printf "$fmt" file kernel ops status time
# shellcheck disable=SC2059
printf "$fmt" ---- ------ --- ------ ----
for r in "${rows[@]}"; do
  IFS='|' read -r f k o s t <<<"$r"
  # shellcheck disable=SC2059
  printf "$fmt" "$f" "$k" "$o" "$s" "$t"
done
for l in "${failed_logs[@]}"; do
  echo
  echo "---- $l"
  tail -n 30 "$l"
done
echo
echo "main job: $nir kernels compiled to IR, sm_90a cubins and headers ($irdir, $cubindir, $incdir), $nrun interpreter runs, $nfail failures"
[ $nfail -eq 0 ]
