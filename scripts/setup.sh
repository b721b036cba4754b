#!/usr/bin/env bash
# setup.sh [--fuzz]: installs, on Debian 12 (or Ubuntu), whatever tilec needs
# to build and test and is not installed yet; installs nothing otherwise.
#   always:  llvm-19-dev llvm-19-tools flex bison libcmocka-dev cmake, a C
#            compiler (clang) and a build tool (make) when none is found
#   --fuzz:  clang-19 and libclang-rt-19-dev (libFuzzer, for the fuzz build)
# Runs apt-get as root, or through sudo.  The CUDA toolkit is not an apt
# package here: it must be in /usr/local/cuda or $CUDA_HOME (checked last).
set -euo pipefail

fuzz=0
for a in "$@"; do
  case $a in
    --fuzz) fuzz=1 ;;
    -h|--help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done

have() { command -v "$1" >/dev/null 2>&1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
need() { # need PACKAGE TEST...: PACKAGE is missing unless it is installed or a TEST command succeeds
  local pkg=$1; shift
  installed "$pkg" && return 0
  for t in "$@"; do eval "$t" >/dev/null 2>&1 && return 0; done
  missing+=("$pkg")
}

need llvm-19-dev    "test -f /usr/lib/llvm-19/lib/cmake/llvm/LLVMConfig.cmake"
need llvm-19-tools  "have FileCheck-19" "test -x /usr/lib/llvm-19/bin/FileCheck"
need flex           "have flex"
need bison          "have bison"
need libcmocka-dev  "test -f /usr/include/cmocka.h"
need cmake          "have cmake"
if ! have cc && ! have gcc && ! have clang; then need clang; fi
if ! have make && ! have ninja; then need make; fi
if [ $fuzz = 1 ]; then
  need clang-19 "have clang-19"
  # libFuzzer's runtime for clang 19
  need libclang-rt-19-dev "ls /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.fuzzer-$(uname -m).a"
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo=()
  elif have sudo; then
    sudo=(sudo)
  else
    echo "setup.sh: missing packages: ${missing[*]}" >&2
    echo "  run as root:  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: every dependency is installed"
fi

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda.h" ]; then
  echo "setup.sh: the CUDA toolkit was not found (no $cuda/include/cuda.h)." >&2
  echo "  Install it (https://developer.nvidia.com/cuda-downloads) or set CUDA_HOME." >&2
  exit 1
fi
