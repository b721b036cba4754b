#!/usr/bin/env bash
# add_subdirectory(tilec): a CMake project that holds tilec's sources as a subfolder (here: the
# sources of this build) builds libtilert from them, gets tilec::tilert, tilec_add_kernels() and
# TILEC_STDLIB_DIR (and SPECS: two specializations in one header), and no tilec test or example (TILEC_BUILD_TESTS and TILEC_EXAMPLES default
# off there).  TILEC_EXECUTABLE points tilec_add_kernels at this build's tilec, so the test builds
# libtilert and the program, not the compiler again.  The program must start and, without a
# driver, print the no-GPU error and exit 77.
source "$(dirname "$0")/lib.bash"
: "${CMAKE_COMMAND:?set CMAKE_COMMAND to cmake}"
src=$(cd "$(dirname "$0")/../.." && pwd)
read -r -a cc <<<"${CC:-cc}"
ccflags="${cc[*]:1}"
nodrv=/nonexistent/libcuda.so.1

mkdir -p app
cp "$inputs/vadd.tile" app/kern.tile
cat > app/main.c <<'C'
#include <stdio.h>
#include "kern.h"
int main(void)
{
    tilert_status s = vadd__BLOCK_256_launch(NULL, NULL, NULL, NULL, 0);
    if (vadd__BLOCK_512_launch(NULL, NULL, NULL, NULL, 0) != s) return 1;
    printf("%s: %s\n", tilert_status_string(s), tilert_last_error());
    if (s == TILERT_ERROR_NO_DRIVER || s == TILERT_ERROR_NO_DEVICE) return 77;
    return s == TILERT_OK ? 0 : 1;
}
C
cat > app/CMakeLists.txt <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(app C)
add_subdirectory("$src" tilec)
add_executable(app main.c)
tilec_add_kernels(TARGET app SOURCES kern.tile ARCH sm_80 SPECS BLOCK=256 BLOCK=512)
message(STATUS "tilec stdlib: \${TILEC_STDLIB_DIR}")
if(TARGET test_npy OR TARGET example_vadd OR TARGET mknpy)
  message(FATAL_ERROR "add_subdirectory(tilec) built tilec's tests or examples")
endif()
CMAKE
check 0 out "tilec stdlib: $src/stdlib" "$CMAKE_COMMAND" -S app -B app/build -DCMAKE_C_COMPILER="${cc[0]}" \
  -DCMAKE_C_FLAGS="$ccflags" -DTILEC_EXECUTABLE="$TILEC"
check 0 out "" "$CMAKE_COMMAND" --build app/build --target app
[ -f app/build/tilec/tilec/app/kern.h ] || [ -f app/build/tilec/app/kern.h ] || fail "no kern.h generated"
env TILERT_CUDA_LIBRARY=$nodrv ./app/build/app >app.txt 2>&1
rc=$?
[ $rc -eq 77 ] || fail "the program exited $rc without a driver (expected 77): $(cat app.txt)"
grep -qF "TILERT_ERROR_NO_DRIVER: no CUDA driver: cannot open $nodrv" app.txt ||
  fail "the program does not give the no-driver error: $(cat app.txt)"
./app/build/app >app.txt 2>&1
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "the program exited $rc: $(cat app.txt)"
finish
