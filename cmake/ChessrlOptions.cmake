# chessrl::options — compile settings every chessrl target links PRIVATE.
# Kept on an interface target rather than set globally, so third-party code and
# later targets (LibTorch, generated protobuf code) are not affected.
add_library(chessrl_options INTERFACE)
add_library(chessrl::options ALIAS chessrl_options)

target_compile_options(chessrl_options INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
if(CHESSRL_WERROR)
  target_compile_options(chessrl_options INTERFACE $<$<CXX_COMPILER_ID:GNU,Clang>:-Werror>)
endif()

# Per-CPU tuning: the chess core leans on POPCNT, and on BMI2 (PEXT) for slider
# attacks when the CPU has it. The default, x86-64-v3, has both and runs on any
# x86-64 CPU since about 2013, so the container images (x86-64-v3 too) can be
# made of a host build; "native" suits a build that runs only where it is built.
if(CHESSRL_ARCH)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-march=${CHESSRL_ARCH} CHESSRL_ARCH_SUPPORTED_${CHESSRL_ARCH})
  if(CHESSRL_ARCH_SUPPORTED_${CHESSRL_ARCH})
    target_compile_options(chessrl_options INTERFACE -march=${CHESSRL_ARCH})
  else()
    message(WARNING "CHESSRL_ARCH=${CHESSRL_ARCH}: the compiler does not accept -march=${CHESSRL_ARCH}; using its default")
  endif()
endif()

if(CHESSRL_SANITIZE)
  target_compile_options(chessrl_options INTERFACE -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(chessrl_options INTERFACE -fsanitize=address,undefined)
endif()

# ThreadSanitizer (the tsan preset, `make tsan`, README.md, Tests): our code is
# instrumented; gRPC, protobuf, hiredis and LibTorch are the system's and are not
# (tests/tsan.supp names the few reports from inside them). Not with CHESSRL_SANITIZE:
# TSan and ASan cannot share a process.
option(CHESSRL_SANITIZE_THREAD "Build with ThreadSanitizer" OFF)
if(CHESSRL_SANITIZE_THREAD)
  if(CHESSRL_SANITIZE)
    message(FATAL_ERROR "CHESSRL_SANITIZE_THREAD and CHESSRL_SANITIZE cannot both be ON")
  endif()
  target_compile_options(chessrl_options INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(chessrl_options INTERFACE -fsanitize=thread)
endif()

# chessrl_configure_fact(<line>): prints the line as a status message and keeps it for
# <build>/chessrl-configure.txt, which the top CMakeLists.txt writes at the end of
# configure: what a build was made with (Protocol Buffers, nccl.h, the CUDA switch),
# for scripts/gpu-check.sh to report beside its figures.
function(chessrl_configure_fact line)
  message(STATUS "${line}")
  set_property(GLOBAL APPEND PROPERTY CHESSRL_CONFIGURE_FACTS "${line}")
endfunction()

# chessrl_add_library(<name> [DEPS ...]): one static library per libs/<name>
# folder with a chessrl::<name> alias; sources are the .cpp files under src/.
function(chessrl_add_library name)
  cmake_parse_arguments(ARG "" "" "PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp")
  add_library(chessrl_${name} STATIC ${_srcs})
  add_library(chessrl::${name} ALIAS chessrl_${name})
  target_include_directories(chessrl_${name} PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/include")
  target_link_libraries(chessrl_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE chessrl::options ${ARG_PRIVATE_DEPS})
endfunction()

# chessrl_add_library_part(<name> <subdir> [PUBLIC_DEPS ...]): a second library
# chessrl::<name> from libs/<lib>/src/<subdir>/*.cpp sharing the folder's
# include/ (the part of a library that needs the services' dependencies).
function(chessrl_add_library_part name subdir)
  cmake_parse_arguments(ARG "" "" "PUBLIC_DEPS" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/${subdir}/*.cpp")
  add_library(chessrl_${name} STATIC ${_srcs})
  add_library(chessrl::${name} ALIAS chessrl_${name})
  target_include_directories(chessrl_${name} PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/include")
  target_link_libraries(chessrl_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE chessrl::options)
endfunction()

# chessrl_add_service(<name> SOURCES <src/...>... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...]
#                     [EXE_DEPS ...]): one pattern for the four services under
# services/<name>/. The library chessrl::<name>_service holds everything the
# service does (the tests use it in-process); its public headers are in
# include/chessrl/<name>_service/ and its src/ stays private. The binary
# chessrl-<name> is main.cpp alone, which calls <name>_service::<name>_main().
function(chessrl_add_service name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS;EXE_DEPS" ${ARGN})
  add_library(chessrl_${name}_service STATIC ${ARG_SOURCES})
  add_library(chessrl::${name}_service ALIAS chessrl_${name}_service)
  target_include_directories(chessrl_${name}_service
    PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/include"
    PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}/src")
  target_link_libraries(chessrl_${name}_service PUBLIC ${ARG_PUBLIC_DEPS}
                        PRIVATE chessrl::options ${ARG_PRIVATE_DEPS})
  add_executable(chessrl-${name} main.cpp)
  target_link_libraries(chessrl-${name} PRIVATE chessrl::options chessrl::${name}_service
                        ${ARG_EXE_DEPS})
endfunction()

# chessrl_torch_pch(<target> [ONLY <file>...]): the files that include LibTorch
# share one precompiled <torch/torch.h>. Its headers are most of such a file's
# compile time (batch.cpp: 14 s with it, 33 s without, -O2 -g1 on two cores),
# and sixteen files include them. chessrl_nn_torch makes the header once (45 s);
# the other targets reuse it: their flags may differ from its only in macros
# LibTorch's headers do not read (GCC refuses it where -pthread defined
# _REENTRANT, hence not the CLI, where one file of thirty needs LibTorch).
# ONLY names the target's files that include LibTorch: loading the header costs
# a file that does not 5 s. -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON turns it off,
# which also checks that every file includes what it uses.
function(chessrl_torch_pch target)
  cmake_parse_arguments(ARG "" "" "ONLY" ${ARGN})
  if(target STREQUAL "chessrl_nn_torch")
    target_precompile_headers(${target} PRIVATE <torch/torch.h>)
  else()
    target_precompile_headers(${target} REUSE_FROM chessrl_nn_torch)
  endif()
  if(ARG_ONLY)
    get_target_property(_srcs ${target} SOURCES)
    set(_found "")
    foreach(_src IN LISTS _srcs)
      get_filename_component(_name "${_src}" NAME)
      if(_name IN_LIST ARG_ONLY)
        list(APPEND _found "${_name}")
      else()
        set_source_files_properties("${_src}" TARGET_DIRECTORY ${target}
                                    PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
    endforeach()
    foreach(_name IN LISTS ARG_ONLY)
      if(NOT _name IN_LIST _found)
        message(FATAL_ERROR "chessrl_torch_pch(${target}): no source file ${_name}")
      endif()
    endforeach()
  endif()
endfunction()
