#!/usr/bin/env bash
# pip_install.sh PYTHON PACKAGE_DIR: `pip install` of the package from the source tree into a
# scratch folder, offline (no build isolation: setuptools as installed), then an import from
# there that compiles nothing and reports the missing driver.  SKIP (77) where pip cannot build
# a wheel offline (no pip, or setuptools without bdist_wheel and no `wheel`).
set -u
py=$1 pkg=$2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/tilec-pip.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
"$py" -m pip --version >/dev/null 2>&1 || { echo "SKIP: no pip"; exit 77; }
"$py" -c 'import setuptools, sys; v = tuple(int(x) for x in setuptools.__version__.split(".")[:2]); sys.exit(0 if v >= (70, 1) else 1)' 2>/dev/null ||
  "$py" -c 'import wheel' 2>/dev/null || { echo "SKIP: setuptools cannot build a wheel offline here (no 'wheel')"; exit 77; }
cp -r "$pkg" "$scratch/src"   # pip builds in the source folder: keep the tree clean
"$py" -m pip install --no-build-isolation --no-deps --no-index --target "$scratch/site" "$scratch/src" >"$scratch/pip.txt" 2>&1 ||
  { echo "FAIL: pip install:"; tail -20 "$scratch/pip.txt"; exit 1; }
cd "$scratch" || exit 1
PYTHONPATH=$scratch/site "$py" - <<'PY' || exit 1
import os, sys
import tilec
assert tilec.__file__.startswith(os.environ["PYTHONPATH"]), tilec.__file__
try:
    tilec.load(b"\x7fELF" + bytes(60))
except (tilec.NoDriverError, tilec.InvalidImageError) as e:
    print("ok:", type(e).__name__, e)
    sys.exit(0)
sys.exit("no error from loading a broken cubin without a driver")
PY
echo "pip install: ok"
