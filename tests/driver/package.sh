#!/usr/bin/env bash
# The ways a project outside tilec uses it, each built and run as a user would:
#   1. `cmake --install` of this build into a temporary prefix: the programs, libtilert, the
#      CMake package, tilert.pc, the stdlib's .tile sources and the docs;
#   2. a CMake project that find_package(Tilec)s the installed prefix, generates a header with
#      tilec_add_kernels(), links tilec::tilert and sees TILEC_STDLIB_DIR;
#   3. a C program built with `pkg-config --cflags --libs tilert` against the prefix, run with
#      no LD_LIBRARY_PATH (the .pc's rpath finds libtilert.so);
#   4. the same CMake project against this build folder (its build-tree export), no install.
# (add_subdirectory(tilec) is tests/driver/subdir.sh.)  Every program must start and, with the
# driver forced missing (TILERT_CUDA_LIBRARY), print the no-GPU error and exit 77.
source "$(dirname "$0")/lib.bash"
: "${CMAKE_COMMAND:?set CMAKE_COMMAND to cmake}"
: "${BUILD_DIR:?set BUILD_DIR to the build folder to install}"
prefix=$scratch/prefix
# CC may carry the sanitizer flags this build's libtilert.a needs at link time
read -r -a cc <<<"${CC:-cc}"
ccflags="${cc[*]:1}"
configure() { "$CMAKE_COMMAND" -DCMAKE_C_COMPILER="${cc[0]}" -DCMAKE_C_FLAGS="$ccflags" "$@"; }
nodrv=/nonexistent/libcuda.so.1

# runs_without_gpu PROGRAM: it starts, and without a driver says so and exits 77
runs_without_gpu() {
  env -u LD_LIBRARY_PATH TILERT_CUDA_LIBRARY=$nodrv "$1" >app.txt 2>&1
  local rc=$?
  [ $rc -eq 77 ] || fail "$1 exited $rc without a driver (expected 77): $(head -c 600 app.txt)"
  grep -qF "TILERT_ERROR_NO_DRIVER: no CUDA driver: cannot open $nodrv" app.txt ||
    fail "$1 does not give the no-driver error: $(head -c 600 app.txt)"
  # with whatever this machine has: a GPU runs it, none gives 77
  env -u LD_LIBRARY_PATH "$1" >app.txt 2>&1
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "$1 exited $rc: $(head -c 600 app.txt)"
}

cat > main.c <<'C'
#include <stdio.h>
#include "kern.h"
int main(void)
{
    tilert_status s = vadd_launch(NULL, NULL, NULL, NULL, 0);
    printf("%s: %s\n", tilert_status_string(s), tilert_last_error());
    if (s == TILERT_ERROR_NO_DRIVER || s == TILERT_ERROR_NO_DEVICE) return 77;
    return s == TILERT_OK ? 0 : 1;
}
C

# ---- 1. install
"$CMAKE_COMMAND" --install "$BUILD_DIR" --prefix "$prefix" >install.txt 2>&1 \
  || { fail "cmake --install failed:"; sed 's/^/    /' install.txt | tail -20; finish; }
for f in bin/tilec include/tilert.h lib/libtilert.a lib/libtilert_meta.a lib/libtilert.so lib/pkgconfig/tilert.pc \
         lib/cmake/Tilec/TilecConfig.cmake lib/cmake/Tilec/TilecConfigVersion.cmake \
         lib/cmake/Tilec/TilecTargets.cmake lib/cmake/Tilec/TilecKernels.cmake \
         share/tilec/stdlib/gemm.tile share/tilec/stdlib/attention.tile \
         share/doc/tilec/README.md share/doc/tilec/REFERENCE.md share/doc/tilec/SEMANTICS.md; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
check 0 out "tilec 0.1.0" "$prefix/bin/tilec" --version
# the installed stdlib compiles with the installed tilec
check 0 out "kernel @" "$prefix/bin/tilec" "$prefix/share/tilec/stdlib/softmax.tile" --emit=ir

# ---- 2. find_package(Tilec) on the prefix (and 4. on the build tree)
mkdir -p app && cp "$inputs/vadd.tile" app/kern.tile && cp main.c app/main.c
cat > app/CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(app C)
find_package(Tilec 0.1 REQUIRED)
add_executable(app main.c)
tilec_add_kernels(TARGET app SOURCES kern.tile ARCH sm_80 DEFINES BLOCK=256 HEADERS_VAR headers)
message(STATUS "tilec headers: ${headers}")
message(STATUS "tilec stdlib: ${TILEC_STDLIB_DIR}")
if(NOT EXISTS "${TILEC_STDLIB_DIR}/gemm.tile")
  message(FATAL_ERROR "TILEC_STDLIB_DIR (${TILEC_STDLIB_DIR}) has no gemm.tile")
endif()
foreach(t tilec::tilec tilec::tilert tilec::tilert_shared)
  if(NOT TARGET ${t})
    message(FATAL_ERROR "no target ${t}")
  endif()
endforeach()
CMAKE
check 0 out "tilec headers: " configure -S app -B app/build -DCMAKE_PREFIX_PATH="$prefix"
grep -q "kern.h" stdout.txt || fail "HEADERS_VAR does not list kern.h"
grep -qF "tilec stdlib: $prefix/share/tilec/stdlib" stdout.txt || fail "TILEC_STDLIB_DIR is not the installed stdlib: $(grep 'tilec stdlib' stdout.txt)"
check 0 out "" "$CMAKE_COMMAND" --build app/build
grep -q "BLOCK=256" app/build/tilec/app/kern.h || fail "DEFINES did not reach tilec"
grep -q "(5[0-9]* bytes, sm_80)\|bytes, sm_80)" app/build/tilec/app/kern.h || fail "ARCH did not reach tilec"
runs_without_gpu ./app/build/app
# a second build does nothing; touching the source remakes the header
check 0 out "" "$CMAKE_COMMAND" --build app/build
grep -q "tilec kern.tile" stdout.txt && fail "an up-to-date build ran tilec again"
touch app/kern.tile
check 0 out "tilec kern.tile -> kern.h (sm_80)" "$CMAKE_COMMAND" --build app/build
# wrong use is a clear configure error
sed 's/ARCH sm_80/ARCH sm_75/' app/CMakeLists.txt > app/CMakeLists.bad && cp app/CMakeLists.txt app/CMakeLists.good &&
  cp app/CMakeLists.bad app/CMakeLists.txt
check 1 err "ARCH sm_75 is not one of sm_80, sm_86," \
  configure -S app -B app/build2 -DCMAKE_PREFIX_PATH="$prefix"
cp app/CMakeLists.good app/CMakeLists.txt

# ---- 3. pkg-config
if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
  pkg-config --cflags --libs tilert >pc.txt 2>&1 || fail "pkg-config tilert: $(cat pc.txt)"
  grep -q -- "-ltilert" pc.txt || fail "pkg-config --libs tilert lacks -ltilert: $(cat pc.txt)"
  # the -I folder, however spelled (${pcfiledir}/../.. is not normalized), is PREFIX/include
  inc=$(tr ' ' '\n' < pc.txt | sed -n 's/^-I//p' | head -n 1)
  [ -n "$inc" ] && [ "$(cd "$inc" 2>/dev/null && pwd -P)" = "$(cd "$prefix/include" && pwd -P)" ] ||
    fail "pkg-config --cflags tilert does not point at $prefix/include (a .pc relocatable with \${pcfiledir}): $(cat pc.txt)"
  pkg-config --static --libs tilert >pcs.txt 2>&1
  grep -q -- "-ltilert_meta" pcs.txt || fail "pkg-config --static --libs tilert lacks -ltilert_meta: $(cat pcs.txt)"
  mkdir -p pc
  check 0 out "" "$prefix/bin/tilec" "$inputs/vadd.tile" --emit=header --embed --arch=sm_80 -o pc/kern.h
  # shellcheck disable=SC2046
  "${cc[@]}" -Wall -Wextra -Werror -Ipc main.c $(pkg-config --cflags --libs tilert) -o pc/app 2>cc.txt ||
    fail "a program does not build with pkg-config --cflags --libs tilert: $(cat cc.txt)"
  if [ -x pc/app ]; then
    readelf -d pc/app 2>/dev/null | grep -q "NEEDED.*libtilert.so" || fail "pc/app is not linked with libtilert.so"
    runs_without_gpu ./pc/app
  fi
  # the documented static link (runtime/tilert.pc.in)
  # shellcheck disable=SC2046
  "${cc[@]}" -Ipc main.c $(pkg-config --cflags tilert) "$prefix/lib/libtilert.a" "$prefix/lib/libtilert_meta.a" \
    -ldl -lpthread -lm -o pc/app-static 2>cc.txt || fail "the static link does not build: $(cat cc.txt)"
  if [ -x pc/app-static ]; then
    readelf -d pc/app-static 2>/dev/null | grep -q "NEEDED.*libtilert" && fail "pc/app-static needs libtilert.so"
    runs_without_gpu ./pc/app-static
  fi
fi

# ---- 4. the build tree as a package: no install
check 0 out "tilec stdlib: " configure -S app -B app/build-tree -DTilec_DIR="$BUILD_DIR"
grep -qF "tilec stdlib: $(cd "$(dirname "$0")/../.." && pwd)/stdlib" stdout.txt ||
  fail "the build tree's TILEC_STDLIB_DIR is not the source stdlib: $(grep 'tilec stdlib' stdout.txt)"
check 0 out "" "$CMAKE_COMMAND" --build app/build-tree
grep -qF "$BUILD_DIR/tools/tilec" app/build-tree/build.ninja app/build-tree/CMakeFiles/app.dir/build.make 2>/dev/null ||
  fail "the build-tree package does not run this build's tilec"
runs_without_gpu ./app/build-tree/app
finish
