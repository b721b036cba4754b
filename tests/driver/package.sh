#!/usr/bin/env bash
# The installed package: `cmake --install` of this build, then a project outside it that
# find_package(Tilec)s, generates a header with tilec_add_kernels(), links tilec::tilert,
# builds, and runs (exit 77 without a GPU); and pkg-config's view of libtilert.
source "$(dirname "$0")/lib.bash"
: "${CMAKE_COMMAND:?set CMAKE_COMMAND to cmake}"
: "${BUILD_DIR:?set BUILD_DIR to the build folder to install}"
prefix=$scratch/prefix
# CC may carry the sanitizer flags this build's libtilert.a needs at link time
read -r -a cc <<<"${CC:-cc}"
ccflags="${cc[*]:1}"
configure() { "$CMAKE_COMMAND" -DCMAKE_C_COMPILER="${cc[0]}" -DCMAKE_C_FLAGS="$ccflags" "$@"; }

"$CMAKE_COMMAND" --install "$BUILD_DIR" --prefix "$prefix" >install.txt 2>&1 \
  || { fail "cmake --install failed:"; sed 's/^/    /' install.txt | tail -20; finish; }
for f in bin/tilec include/tilert.h lib/libtilert.a lib/libtilert_meta.a lib/libtilert.so lib/pkgconfig/tilert.pc \
         lib/cmake/Tilec/TilecConfig.cmake lib/cmake/Tilec/TilecConfigVersion.cmake \
         lib/cmake/Tilec/TilecTargets.cmake lib/cmake/Tilec/TilecKernels.cmake; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
check 0 out "tilec 0.1.0" "$prefix/bin/tilec" --version

mkdir -p app && cp "$inputs/vadd.tile" app/kern.tile
cat > app/CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(app C)
find_package(Tilec 0.1 REQUIRED)
add_executable(app main.c)
tilec_add_kernels(TARGET app SOURCES kern.tile ARCH sm_80 DEFINES BLOCK=256 HEADERS_VAR headers)
message(STATUS "tilec headers: ${headers}")
foreach(t tilec::tilec tilec::tilert tilec::tilert_shared)
  if(NOT TARGET ${t})
    message(FATAL_ERROR "no target ${t}")
  endif()
endforeach()
CMAKE
cat > app/main.c <<'C'
#include <stdio.h>
#include "kern.h"
int main(void)
{
    tilert_status s = vadd_launch(NULL, NULL, NULL, NULL, 0);
    printf("%s\n", tilert_status_string(s));
    if (s == TILERT_ERROR_NO_DRIVER || s == TILERT_ERROR_NO_DEVICE) return 77;
    return s == TILERT_OK ? 0 : 1;
}
C
check 0 out "tilec headers: " configure -S app -B app/build -DCMAKE_PREFIX_PATH="$prefix"
grep -q "kern.h" stdout.txt || fail "HEADERS_VAR does not list kern.h"
check 0 out "" "$CMAKE_COMMAND" --build app/build
grep -q "BLOCK=256" app/build/tilec/app/kern.h || fail "DEFINES did not reach tilec"
grep -q "(5[0-9]* bytes, sm_80)\|bytes, sm_80)" app/build/tilec/app/kern.h || fail "ARCH did not reach tilec"
./app/build/app >app.txt
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "the app exited $rc: $(cat app.txt)"
# a second build does nothing; touching the source remakes the header
check 0 out "" "$CMAKE_COMMAND" --build app/build
grep -q "tilec kern.tile" stdout.txt && fail "an up-to-date build ran tilec again"
touch app/kern.tile
check 0 out "tilec kern.tile -> kern.h (sm_80)" "$CMAKE_COMMAND" --build app/build
# wrong use is a clear configure error
sed -i 's/ARCH sm_80/ARCH sm_75/' app/CMakeLists.txt
check 1 err "ARCH sm_75 is not one of sm_80, sm_86," \
  configure -S app -B app/build2 -DCMAKE_PREFIX_PATH="$prefix"

# pkg-config
if command -v pkg-config >/dev/null; then
  PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs tilert >pc.txt 2>&1 || fail "pkg-config tilert: $(cat pc.txt)"
  grep -q -- "-ltilert" pc.txt || fail "pkg-config --libs tilert lacks -ltilert: $(cat pc.txt)"
  # the -I folder, however spelled (${pcfiledir}/../.. is not normalized), is PREFIX/include
  inc=$(tr ' ' '\n' < pc.txt | sed -n 's/^-I//p' | head -n 1)
  [ -n "$inc" ] && [ "$(cd "$inc" 2>/dev/null && pwd -P)" = "$(cd "$prefix/include" && pwd -P)" ] ||
    fail "pkg-config --cflags tilert does not point at $prefix/include (a .pc relocatable with \${pcfiledir}): $(cat pc.txt)"
  PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --static --libs tilert >pcs.txt 2>&1
  grep -q -- "-ltilert_meta" pcs.txt || fail "pkg-config --static --libs tilert lacks -ltilert_meta: $(cat pcs.txt)"
fi
finish
