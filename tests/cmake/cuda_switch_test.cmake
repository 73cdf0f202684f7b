# cmake -P: the CHESSRL_CUDA switch (cmake/ChessrlCuda.cmake), each setting against
# this machine's LibTorch and against a faked CUDA build of it. Variables from
# tests/cmake/CMakeLists.txt: SOURCE_DIR, WORK_DIR, GENERATOR, MAKE_PROGRAM,
# CXX_COMPILER, TORCH_DIR, TORCH_HAS_CUDA (whether the real LibTorch has CUDA).
cmake_minimum_required(VERSION 3.22)

file(REMOVE_RECURSE "${WORK_DIR}")
set(failures 0)

# configure(<folder> <cache args>...): configures the core (no services, no tests)
# into WORK_DIR/<folder>; sets rc, flat (the output, whitespace runs as one space:
# CMake wraps error messages), line (the switch's status line) and commands (the
# compile_commands.json written, empty when configure failed).
macro(configure folder)
  file(REMOVE "${WORK_DIR}/${folder}/compile_commands.json")
  string(TIMESTAMP _t0 "%s")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/${folder}" -G "${GENERATOR}"
            "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
            -DCHESSRL_SERVICES=OFF -DCHESSRL_BUILD_TESTS=OFF ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  string(TIMESTAMP _t1 "%s")
  math(EXPR _secs "${_t1} - ${_t0}")
  string(REGEX REPLACE "[ \t\r\n]+" " " flat "${_out}")
  string(REGEX MATCH "chessrl: CUDA-only code[^\n]*" line "${_out}")
  set(commands "")
  if(rc EQUAL 0 AND EXISTS "${WORK_DIR}/${folder}/compile_commands.json")
    file(READ "${WORK_DIR}/${folder}/compile_commands.json" commands)
  endif()
  set(case "${folder} ${ARGN}")
  if(line STREQUAL "")
    string(REGEX MATCH "CMake Error at [^\n]*\n *([^\n]*)" _said "${_out}")
    set(line "${CMAKE_MATCH_1} ...")
  endif()
  message(STATUS "${case}: exit ${rc}, ${_secs} s: ${line}")
endmacro()

# check(<what> <condition>...): counts a failure, and shows the output, unless the
# condition (if() syntax) holds.
macro(check what)
  if(NOT (${ARGN}))
    math(EXPR failures "${failures} + 1")
    message(SEND_ERROR "FAILED (${case}): ${what}\n--- configure said:\n${_out}")
  endif()
endmacro()

# A configure that succeeded, said `verdict` (built / not built) and `why`, and put
# nccl_group.cpp in the build exactly when it said built.
macro(check_chosen verdict why)
  check("configure succeeds" rc EQUAL 0)
  string(FIND "${line}" "CUDA-only code (NCCL) ${verdict}: ${why}" _at)
  check("the status line says '${verdict}: ${why}'" _at GREATER_EQUAL 0)
  string(FIND "${commands}" "process_group.cpp" _pg)
  string(FIND "${commands}" "cuda/nccl_group.cpp" _nccl)
  string(FIND "${commands}" "CHESSRL_HAVE_NCCL" _have)
  check("compile_commands.json lists process_group.cpp" _pg GREATER_EQUAL 0)
  if("${verdict}" STREQUAL "built")
    check("nccl_group.cpp is compiled, with CHESSRL_HAVE_NCCL"
          _nccl GREATER_EQUAL 0 AND _have GREATER_EQUAL 0)
  else()
    check("neither nccl_group.cpp nor CHESSRL_HAVE_NCCL is in the build"
          _nccl EQUAL -1 AND _have EQUAL -1)
  endif()
endmacro()

# A configure that stopped with `message` (after CMake's wrapping).
macro(check_refused message)
  check("configure fails" NOT rc EQUAL 0)
  string(FIND "${flat}" "${message}" _at)
  check("configure says '${message}'" _at GREATER_EQUAL 0)
endmacro()

# This machine's LibTorch.
configure(real "-DTorch_DIR=${TORCH_DIR}" -DCHESSRL_CUDA=OFF)
check_chosen("not built" "CHESSRL_CUDA=OFF, switched off")
if(NOT TORCH_HAS_CUDA)
  configure(real -DCHESSRL_CUDA=AUTO)
  check_chosen("not built" "CHESSRL_CUDA=AUTO, LibTorch has no CUDA")
  configure(real -DCHESSRL_CUDA=ON)
  check_refused("CHESSRL_CUDA=ON, but LibTorch has no CUDA (the LibTorch found at ${TORCH_DIR} is a CPU build)")
endif()
configure(real -DCHESSRL_CUDA=maybe)
check_refused("CHESSRL_CUDA=maybe: expected AUTO, ON or OFF")

# A CUDA build of LibTorch, faked: the real one with TORCH_CUDA_LIBRARIES set,
# which is what ChessrlCuda.cmake looks at. Nothing links it.
file(WRITE "${WORK_DIR}/fake-cuda-torch/TorchConfig.cmake"
     "include(\"${TORCH_DIR}/TorchConfig.cmake\")\nset(TORCH_CUDA_LIBRARIES chessrl-test-fake-cuda)\n")
file(WRITE "${WORK_DIR}/fake-nccl/nccl.h" "#error a test's stand-in, never compiled\n")
set(fake "-DTorch_DIR=${WORK_DIR}/fake-cuda-torch")

# ON without nccl.h: refused, naming where it looked. A machine with nccl.h in a
# system folder (libnccl-dev) finds it there instead, and the line says where.
configure(fake-cuda ${fake} -DCHESSRL_CUDA=ON)
if(rc EQUAL 0)
  check_chosen("built" "CHESSRL_CUDA=ON, LibTorch has CUDA, nccl.h in /")
else()
  check_refused("CHESSRL_CUDA=ON, but nccl.h was not found (LibTorch has CUDA). Looked in ")
  check_refused("/nvidia/nccl/include")
endif()
# AUTO and ON with nccl.h: built.
configure(fake-cuda ${fake} -DCHESSRL_CUDA=AUTO "-DCHESSRL_NCCL_INCLUDE=${WORK_DIR}/fake-nccl")
check_chosen("built" "CHESSRL_CUDA=AUTO, LibTorch has CUDA, nccl.h in ${WORK_DIR}/fake-nccl")
configure(fake-cuda ${fake} -DCHESSRL_CUDA=ON)
check_chosen("built" "CHESSRL_CUDA=ON, LibTorch has CUDA, nccl.h in ${WORK_DIR}/fake-nccl")
# OFF: never, though LibTorch has CUDA and nccl.h is there.
configure(fake-cuda ${fake} -DCHESSRL_CUDA=OFF)
check_chosen("not built" "CHESSRL_CUDA=OFF, switched off")

# A wheel's layout: LibTorch in site/torch, the nvidia-nccl wheel's nccl.h in
# site/nvidia/nccl/include, and a CUDA toolkit with an nccl.h of another version. The
# wheel's is used (it matches the libnccl.so.2 LibTorch loads), both are printed,
# and the mismatch is warned about.
set(site "${WORK_DIR}/site-packages")
file(WRITE "${site}/torch/share/cmake/Torch/TorchConfig.cmake"
     "include(\"${TORCH_DIR}/TorchConfig.cmake\")\nset(TORCH_CUDA_LIBRARIES chessrl-test-fake-cuda)\n"
     "set(TORCH_INSTALL_PREFIX \"${site}/torch\")\n"
     "set(CUDAToolkit_INCLUDE_DIRS \"${WORK_DIR}/toolkit/include\")\n")
macro(fake_nccl dir major minor patch)
  file(WRITE "${dir}/nccl.h" "#error a test's stand-in, never compiled\n#define NCCL_MAJOR ${major}\n"
       "#define NCCL_MINOR ${minor}\n#define NCCL_PATCH ${patch}\n")
endmacro()
fake_nccl("${site}/nvidia/nccl/include" 2 28 9)
fake_nccl("${WORK_DIR}/toolkit/include" 2 21 5)
configure(wheel "-DTorch_DIR=${site}/torch/share/cmake/Torch" -DCHESSRL_CUDA=AUTO)
check_chosen("built" "CHESSRL_CUDA=AUTO, LibTorch has CUDA, nccl.h in ${site}/nvidia/nccl/include")
string(FIND "${flat}" "chessrl: nccl.h 2.28.9 in ${site}/nvidia/nccl/include (used), nccl.h 2.21.5 in ${WORK_DIR}/toolkit/include (not used)" _at)
check("configure prints both nccl.h versions, the wheel's used" _at GREATER_EQUAL 0)
string(FIND "${flat}" "two versions of nccl.h: 2.28.9" _at)
check("configure warns that the two nccl.h differ" _at GREATER_EQUAL 0)

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} check(s) failed")
endif()
message(STATUS "every check passed")
