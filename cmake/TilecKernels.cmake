# TilecKernels.cmake: tilec_add_kernels(), for this project and for projects
# that find_package(Tilec).
#
#   tilec_add_kernels(TARGET <target> SOURCES <file.tile>...
#                     [ARCH <one of TILEC_ARCHS>]             # default: ${TILEC_ARCH}, else TILEC_DEFAULT_ARCH
#                     [DEFINES NAME=VALUE...]                  # -D for every source
#                     [SPECS "NAME=VALUE[,NAME=VALUE...]"...]  # --spec: several specializations
#                                                              # in one header (K__P_V_launch)
#                     [KERNEL <name>]                          # only this kernel of each source
#                     [TUNE_TABLE <table.json>]                # the specializations a tuning table
#                                                              # (tilec tune) chose, and K_launch
#                                                              # choosing by shape; one source only
#                     [OPTIONS <tilec option>...]              # e.g. -O2 -g --no-lineinfo
#                     [OUTPUT_DIR <dir>]                       # default: <binary dir>/tilec/<target>
#                     [HEADERS_VAR <var>])                     # set to the list of generated headers
#
# For each FILE.tile, a build rule runs
#     tilec FILE.tile --emit=header --embed --arch=ARCH [-D...] [--spec...] [--tune-table T] [OPTIONS]
#           -o OUTPUT_DIR/FILE.h
# whenever the source, the table or tilec changes.  The header holds the cubin and one typed
# launch function per kernel (see tilec --help).  The headers become sources of
# <target> (an existing executable or library, in the current directory), their
# folder one of its include directories, and <target> links tilec::tilert, so
#     #include "FILE.h"
# is all a source of <target> needs.
#
# tilec is the target tilec::tilec: the imported one of an installed tilec
# (TilecConfig.cmake), or the alias of the one built in this project.
# TILEC_EXECUTABLE, if set, names another tilec to run instead.
include_guard(GLOBAL)

function(tilec_add_kernels)
  cmake_parse_arguments(PARSE_ARGV 0 TK "" "TARGET;ARCH;KERNEL;OUTPUT_DIR;HEADERS_VAR;TUNE_TABLE"
                        "SOURCES;DEFINES;SPECS;OPTIONS")
  if(TK_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tilec_add_kernels: unknown arguments: ${TK_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TK_TARGET)
    message(FATAL_ERROR "tilec_add_kernels: TARGET <target> is required")
  endif()
  if(NOT TARGET ${TK_TARGET})
    message(FATAL_ERROR "tilec_add_kernels: '${TK_TARGET}' is not a target (create it first with "
                        "add_executable or add_library)")
  endif()
  if(NOT TK_SOURCES)
    message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): SOURCES <file.tile>... is required")
  endif()
  if(NOT TK_ARCH)
    if(TILEC_ARCH)
      set(TK_ARCH ${TILEC_ARCH})
    else()
      set(TK_ARCH ${TILEC_DEFAULT_ARCH})
    endif()
  endif()
  list(FIND TILEC_ARCHS "${TK_ARCH}" tk_arch_index)
  if(tk_arch_index LESS 0)
    list(JOIN TILEC_ARCHS ", " tk_archs)
    message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): ARCH ${TK_ARCH} is not one of ${tk_archs}")
  endif()
  if(NOT TK_OUTPUT_DIR)
    set(TK_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/tilec/${TK_TARGET})
  endif()

  # the tilec to run, and what the rules depend on so that a new tilec remakes the headers
  if(TILEC_EXECUTABLE)
    set(tilec_cmd ${TILEC_EXECUTABLE})
    set(tilec_dep ${TILEC_EXECUTABLE})
  elseif(TARGET tilec::tilec)
    get_target_property(aliased tilec::tilec ALIASED_TARGET)
    if(aliased)
      set(tilec_cmd ${aliased})
      set(tilec_dep ${aliased})
    else()
      set(tilec_cmd tilec::tilec)
      set(tilec_dep $<TARGET_FILE:tilec::tilec>)
    endif()
  else()
    message(FATAL_ERROR "tilec_add_kernels: no tilec: find_package(Tilec) first, or set TILEC_EXECUTABLE")
  endif()
  if(NOT TARGET tilec::tilert)
    message(FATAL_ERROR "tilec_add_kernels: the target tilec::tilert (libtilert) is missing: find_package(Tilec) first")
  endif()

  set(defines "")
  foreach(d IN LISTS TK_DEFINES)
    if(NOT d MATCHES "^[A-Za-z_][A-Za-z_0-9]*=.+")
      message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): DEFINES wants NAME=VALUE, not '${d}'")
    endif()
    list(APPEND defines -D ${d})
  endforeach()
  set(specs "")
  foreach(sp IN LISTS TK_SPECS)
    if(NOT sp MATCHES "^[A-Za-z_][A-Za-z_0-9]*=[^,]+(,[A-Za-z_][A-Za-z_0-9]*=[^,]+)*$")
      message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): SPECS wants NAME=VALUE[,NAME=VALUE...], not '${sp}'")
    endif()
    list(APPEND specs --spec ${sp})
  endforeach()
  set(kernel "")
  if(TK_KERNEL)
    set(kernel --kernel ${TK_KERNEL})
  endif()
  set(table "")
  set(table_dep "")
  if(TK_TUNE_TABLE)
    get_filename_component(table_abs ${TK_TUNE_TABLE} ABSOLUTE)
    if(NOT EXISTS ${table_abs})
      message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): TUNE_TABLE ${TK_TUNE_TABLE} does not exist "
                          "(make it with tilec tune)")
    endif()
    list(LENGTH TK_SOURCES tk_nsources)
    if(NOT tk_nsources EQUAL 1)
      message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): TUNE_TABLE goes with one source (the table "
                          "tunes one kernel of it); call tilec_add_kernels once per table")
    endif()
    if(TK_SPECS)
      message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): SPECS and TUNE_TABLE exclude each other "
                          "(the table chooses the specializations)")
    endif()
    set(table --tune-table ${table_abs})
    set(table_dep ${table_abs})
  endif()

  file(MAKE_DIRECTORY ${TK_OUTPUT_DIR})
  set(headers "")
  foreach(src IN LISTS TK_SOURCES)
    get_filename_component(src_abs ${src} ABSOLUTE)
    get_filename_component(name ${src} NAME_WE)
    set(hdr ${TK_OUTPUT_DIR}/${name}.h)
    if(hdr IN_LIST headers)
      message(FATAL_ERROR "tilec_add_kernels(TARGET ${TK_TARGET}): two sources make ${name}.h")
    endif()
    add_custom_command(
      OUTPUT ${hdr}
      COMMAND ${tilec_cmd} ${src_abs} --emit=header --embed --arch=${TK_ARCH} ${defines} ${specs} ${kernel} ${table}
              ${TK_OPTIONS} --diagnostics-color=never -o ${hdr}
      DEPENDS ${src_abs} ${tilec_dep} ${table_dep}
      COMMENT "tilec ${name}.tile -> ${name}.h (${TK_ARCH})"
      VERBATIM)
    list(APPEND headers ${hdr})
  endforeach()
  target_sources(${TK_TARGET} PRIVATE ${headers})
  target_include_directories(${TK_TARGET} PRIVATE ${TK_OUTPUT_DIR})
  target_link_libraries(${TK_TARGET} PRIVATE tilec::tilert)
  if(TK_HEADERS_VAR)
    set(${TK_HEADERS_VAR} ${headers} PARENT_SCOPE)
  endif()
endfunction()
