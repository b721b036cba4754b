#!/usr/bin/env bash
# main.sh: the main job, from a fresh clone.
#   1. installs what is missing (scripts/setup.sh),
#   2. configures and builds tilec and libtilert in build/ (Release): all that
#      `cmake --install build --prefix PREFIX` installs,
#   3. runs scripts/main-job.sh: every .tile of examples/ and stdlib/ to IR (build/main-job/ir/),
#      and every example in the interpreter on random data (examples/NAME.run), with a table.
# Exit status: non-zero if any step or any kernel failed.
# Environment: BUILD_DIR (default build), JOBS (default: number of cores).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

"$root/scripts/setup.sh"

gen=()
# a new build folder uses Ninja when there is one; an existing one keeps its generator
if command -v ninja >/dev/null 2>&1 && [ ! -f "$build/CMakeCache.txt" ]; then gen=(-G Ninja); fi
echo "main.sh: configuring and building tilec and libtilert (Release) in $build"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1 || { cat "$log"; exit 1; }
cmake --build "$build" -j "$jobs" --target tilec tilert tilert_shared tilert_meta

"$root/scripts/main-job.sh" "$build"
