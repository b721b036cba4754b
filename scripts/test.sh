#!/usr/bin/env bash
# test.sh: installs what is missing, then runs every test of tilec, the way CI does.
#   1. werror:   build with -DTILEC_WERROR=ON (-Wall -Wextra -Werror), ctest
#   2. sanitize: build with -DTILEC_SANITIZE=ON (ASan+UBSan, -fno-sanitize-recover=all), ctest
#   3. fuzz:     build with clang-19 and -DTILEC_FUZZ=ON (libFuzzer + ASan + UBSan),
#                replay the seed corpus tests/fuzz/corpus through fuzz_frontend and fuzz_backend
#                (ctest -L fuzz)
#   4. main:     the main job (scripts/main-job.sh) on the -Werror build: every examples/ and
#                stdlib/ kernel must compile to IR and every example must run in the interpreter
#                (its outputs go to build-ci-werror/main-job/); then `cmake --install` of that
#                build into a temporary prefix must still work (the job leaves CMake's folders alone)
#   5. stdlib:   scripts/check-stdlib.py on the -Werror build: every stdlib kernel in the
#                interpreter against a float64 reference (needs python3; shown as SKIPPED without)
# Every step runs even when an earlier one failed; a summary comes last and the
# exit status is non-zero if any step failed.
# Environment: TILEC_TEST_STEPS="werror sanitize fuzz main stdlib" (a subset to run),
# TILEC_BUILD_TYPE (default Debug), JOBS (default: number of cores).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

"$root/scripts/setup.sh" --fuzz || { echo "test.sh: setup failed" >&2; exit 1; }

steps=${TILEC_TEST_STEPS:-werror sanitize fuzz main stdlib}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
btype=${TILEC_BUILD_TYPE:-Debug}
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export CTEST_OUTPUT_ON_FAILURE=1

declare -a names results times
run_step() { # run_step NAME BUILD_DIR CTEST_ARGS TARGETS -- CMAKE_ARGS...  (TARGETS "": all)
  local name=$1 dir=$2 ctest_args=$3 target=$4; shift 5
  # shellcheck disable=SC2206
  local tgt=(); [ -n "$target" ] && tgt=(--target $target)
  local g=(); [ -f "$dir/CMakeCache.txt" ] || g=("${gen[@]}")   # an existing folder keeps its generator
  local t0=$SECONDS status=PASS
  echo
  echo "==== test.sh: $name: configure and build in $dir"
  if ! cmake -S "$root" -B "$dir" "${g[@]}" -DCMAKE_BUILD_TYPE="$btype" "$@"; then
    status="FAIL (configure)"
  elif ! cmake --build "$dir" -j "$jobs" "${tgt[@]}"; then
    status="FAIL (build)"
  else
    echo "==== test.sh: $name: ctest"
    # shellcheck disable=SC2086
    if ! (cd "$dir" && ctest --output-on-failure -j "$jobs" $ctest_args); then
      status="FAIL (tests)"
    fi
  fi
  names+=("$name"); results+=("$status"); times+=("$((SECONDS - t0))s")
}

for s in $steps; do
  case $s in
    werror)   run_step werror   "$root/build-ci-werror"   "" "" -- -DTILEC_WERROR=ON ;;
    # the sanitize build runs every test but the per-variant cubin compiles (label cubin: the
    # werror build and the main job compile every stdlib kernel already; under ASan they
    # would take most of CI's time)
    sanitize) run_step sanitize "$root/build-ci-sanitize" "-LE cubin" "" -- -DTILEC_SANITIZE=ON ;;
    fuzz)     run_step fuzz     "$root/build-ci-fuzz"     "-L fuzz" "fuzz_frontend fuzz_backend" -- -DTILEC_FUZZ=ON \
                -DCMAKE_C_COMPILER=clang-19 ;;
    main)
      t0=$SECONDS
      echo
      echo "==== test.sh: main: the main job on build-ci-werror"
      prefix=$(mktemp -d)
      if [ -x "$root/build-ci-werror/tools/tilec" ] && "$root/scripts/main-job.sh" "$root/build-ci-werror" &&
         cmake --install "$root/build-ci-werror" --prefix "$prefix" >/dev/null; then
        r=PASS
      else
        r=FAIL
      fi
      rm -rf "$prefix"
      names+=(main); results+=("$r"); times+=("$((SECONDS - t0))s") ;;
    stdlib)
      t0=$SECONDS
      echo
      echo "==== test.sh: stdlib: stdlib kernels against float64 references (build-ci-werror)"
      if ! command -v python3 >/dev/null 2>&1; then
        r="SKIPPED (no python3)"
      elif [ -x "$root/build-ci-werror/tools/tilec" ] &&
           python3 "$root/scripts/check-stdlib.py" "$root/build-ci-werror/tools/tilec"; then
        r=PASS
      else
        r=FAIL
      fi
      names+=(stdlib); results+=("$r"); times+=("$((SECONDS - t0))s") ;;
    *) echo "test.sh: unknown step '$s'" >&2; names+=("$s"); results+=("FAIL (unknown step)"); times+=(-) ;;
  esac
done

echo
echo "==== test.sh: summary"
printf '  %-10s %-22s %s\n' step result time
fail=0
for i in "${!names[@]}"; do
  printf '  %-10s %-22s %s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
  case ${results[$i]} in PASS|SKIPPED*) ;; *) fail=1 ;; esac
done
if [ $fail = 0 ]; then echo "test.sh: ALL PASSED"; else echo "test.sh: FAILED"; fi
exit $fail
