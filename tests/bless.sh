#!/usr/bin/env bash
# bless.sh [BUILD_DIR]: re-blesses every diagnostic golden (tests/errors/**/*.err)
# from the current tilec.  Review the diff like code before committing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
export TILEC=${TILEC:-$build/tools/tilec}
find "$here/errors" -name '*.tile' | sort | while read -r t; do "$here/errors/check.sh" --bless "$t"; done
git -C "$here/.." diff --stat -- tests/errors || true
