#!/usr/bin/env bash
# pip_install.sh PYTHON PACKAGE_DIR: `pip install` of the package from the source tree, offline
# (--no-index; the build backend, python/_build/tilec_build.py, needs nothing but the standard
# library): into a scratch --target folder with build isolation and without it, and editable into
# a scratch venv; then an import from each that compiles nothing and reports the missing driver.
# SKIP (77) only where there is no pip.
set -u
py=$1 pkg=$2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/tilec-pip.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
"$py" -m pip --version >/dev/null 2>&1 || { echo "SKIP: no pip"; exit 77; }
cp -r "$pkg" "$scratch/src"   # pip may write into the source folder: keep the tree clean
pip_install() { # pip_install LOG [--python VENV_PYTHON] ARGS...
  local log=$1 target=(); shift
  [ "$1" = --python ] && { target=(--python "$2"); shift 2; }
  PIP_NO_INDEX=1 PIP_FIND_LINKS= "$py" -m pip "${target[@]}" install --no-deps --no-index \
    --disable-pip-version-check "$@" >"$log" 2>&1 || { echo "FAIL: pip install $*:"; tail -20 "$log"; exit 1; }
}
# imports tilec with PYTHON (default $py) from where SITE says; it must come from there
check_import() { # check_import WHERE PYTHON [PYTHONPATH]
  (cd "$scratch" && PYTHONPATH=${3:-} TILEC_WHERE=$1 "$2" - <<'PY') || { echo "FAIL: import from $1"; exit 1; }
import os, sys
import tilec
assert tilec.__file__.startswith(os.environ["TILEC_WHERE"]), tilec.__file__
assert tilec.__version__ == "0.1.0", tilec.__version__
assert callable(tilec.stdlib.flash_attn) and callable(tilec.stdlib.gemm)
try:
    tilec.load(b"\x7fELF" + bytes(60))
except (tilec.NoDriverError, tilec.InvalidImageError) as e:
    print("ok:", type(e).__name__, e)
    sys.exit(0)
sys.exit("no error from loading a broken cubin without a driver")
PY
}
pip_install "$scratch/pip1.txt" --target "$scratch/site1" "$scratch/src"                         # isolated build
check_import "$scratch/site1" "$py" "$scratch/site1"
pip_install "$scratch/pip2.txt" --no-build-isolation --target "$scratch/site2" "$scratch/src"    # setuptools-free
check_import "$scratch/site2" "$py" "$scratch/site2"
[ -f "$scratch/site2/tilec-0.1.0.dist-info/RECORD" ] || { echo "FAIL: no RECORD in the installed .dist-info"; exit 1; }
grep -q "^tilec/stdlib.py,sha256=" "$scratch/site2/tilec-0.1.0.dist-info/RECORD" ||
  { echo "FAIL: RECORD does not list tilec/stdlib.py"; exit 1; }
# editable, into a venv (no pip inside it: the outer pip installs into it with --python)
if "$py" -m venv --without-pip "$scratch/venv" >/dev/null 2>&1 && "$py" -m pip --help | grep -q -- "--python "; then
  pip_install "$scratch/pip3.txt" --python "$scratch/venv/bin/python" -e "$scratch/src"
  check_import "$scratch/src/tilec" "$scratch/venv/bin/python"
else
  echo "note: no venv --without-pip or no pip --python here: the editable install is not tried"
fi
echo "pip install: ok"
