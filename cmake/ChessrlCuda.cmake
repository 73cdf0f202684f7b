# CHESSRL_CUDA (AUTO, ON or OFF; the top CMakeLists.txt): whether the CUDA-only
# code is built. That is the code that needs CUDA's own headers, not LibTorch's
# run-time device choice (--device cuda works with the switch off): today the NCCL
# process group, libs/train/src/cuda/ (its files are listed in libs/train/CMakeLists.txt).
#   AUTO  built when LibTorch has CUDA and nccl.h is found
#   ON    the same, but configure stops, naming what is missing, when it cannot be
#   OFF   never, even with a CUDA build of LibTorch
# Included after find_package(Torch). Sets CHESSRL_TORCH_HAS_CUDA and
# CHESSRL_CUDA_ENABLED (ON/OFF) and, when the latter is ON, CHESSRL_NCCL_INCLUDE
# (nccl.h's folder; a cache variable, which can be set to point at it) and
# CHESSRL_NCCL_HEADER_VERSION. Prints a status line with the choice and why, and,
# with NCCL, one with the version of each nccl.h found (the wheel's is used over a
# toolkit's). tests/cmake/cuda_switch_test.cmake checks each case.
# The version an nccl.h declares (NCCL_MAJOR.NCCL_MINOR.NCCL_PATCH), or "of unknown version".
function(_chessrl_nccl_version dir out)
  set(_v "")
  foreach(_part MAJOR MINOR PATCH)
    file(STRINGS "${dir}/nccl.h" _line REGEX "^#define NCCL_${_part} +[0-9]+" LIMIT_COUNT 1)
    if(_line MATCHES "([0-9]+)$")
      list(APPEND _v "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  list(LENGTH _v _n)
  if(_n EQUAL 3)
    list(JOIN _v "." _v)
  else()
    set(_v "of unknown version")
  endif()
  set(${out} "${_v}" PARENT_SCOPE)
endfunction()

string(TOUPPER "${CHESSRL_CUDA}" _chessrl_cuda)
if(NOT _chessrl_cuda MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "CHESSRL_CUDA=${CHESSRL_CUDA}: expected AUTO, ON or OFF")
endif()

set(CHESSRL_TORCH_HAS_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(CHESSRL_TORCH_HAS_CUDA ON)
endif()

set(CHESSRL_CUDA_ENABLED OFF)
if(_chessrl_cuda STREQUAL "OFF")
  set(_chessrl_cuda_why "switched off")
elseif(NOT CHESSRL_TORCH_HAS_CUDA)
  if(_chessrl_cuda STREQUAL "ON")
    message(FATAL_ERROR
      "CHESSRL_CUDA=ON, but LibTorch has no CUDA (the LibTorch found at ${Torch_DIR} is a "
      "CPU build): point CMAKE_PREFIX_PATH at a CUDA build of LibTorch (a CUDA PyTorch "
      "wheel's torch/share/cmake), or configure with CHESSRL_CUDA=AUTO or OFF")
  endif()
  set(_chessrl_cuda_why "LibTorch has no CUDA")
else()
  # nccl.h: the one of the NCCL that LibTorch loads comes first. Beside a PyTorch
  # wheel's LibTorch that is the nvidia-nccl wheel's (site-packages/nvidia/nccl, or
  # nvidia/cu13 and nvidia/cu12 in the CUDA-versioned layouts); a CUDA toolkit or the
  # system (libnccl-dev) may hold another version, and a header of another version
  # than the library changes the layout of what ProcessGroupNCCL.hpp declares
  # (ProcessGroupNCCL::Options holds an ncclConfig_t). So the wheel's folders are
  # searched alone first, then the toolkit's and the system's; both versions are printed.
  set(_chessrl_nccl_wheel "")
  foreach(_dir nvidia/nccl/include nvidia/cu13/include nvidia/cu12/include)
    get_filename_component(_hint "${TORCH_INSTALL_PREFIX}/../${_dir}" ABSOLUTE)
    list(APPEND _chessrl_nccl_wheel "${_hint}")
  endforeach()
  set(_chessrl_nccl_toolkit ${CUDAToolkit_INCLUDE_DIRS})
  if(CUDA_TOOLKIT_ROOT_DIR)
    list(APPEND _chessrl_nccl_toolkit "${CUDA_TOOLKIT_ROOT_DIR}/include")
  endif()
  list(REMOVE_DUPLICATES _chessrl_nccl_toolkit)
  set(_chessrl_nccl_hints ${_chessrl_nccl_wheel} ${_chessrl_nccl_toolkit})
  find_path(CHESSRL_NCCL_INCLUDE nccl.h PATHS ${_chessrl_nccl_wheel} NO_DEFAULT_PATH
            DOC "The folder of nccl.h (CHESSRL_CUDA, cmake/ChessrlCuda.cmake)")
  find_path(CHESSRL_NCCL_INCLUDE nccl.h HINTS ${_chessrl_nccl_toolkit}
            DOC "The folder of nccl.h (CHESSRL_CUDA, cmake/ChessrlCuda.cmake)")
  # The other nccl.h, the toolkit's or the system's, only to print its version.
  find_path(_chessrl_nccl_other nccl.h HINTS ${_chessrl_nccl_toolkit} NO_CACHE)
  if(_chessrl_nccl_other)
    get_filename_component(_chessrl_nccl_other "${_chessrl_nccl_other}" ABSOLUTE)
  endif()
  if(CHESSRL_NCCL_INCLUDE)
    set(CHESSRL_CUDA_ENABLED ON)
    _chessrl_nccl_version("${CHESSRL_NCCL_INCLUDE}" CHESSRL_NCCL_HEADER_VERSION)
    set(_chessrl_cuda_why "LibTorch has CUDA, nccl.h in ${CHESSRL_NCCL_INCLUDE}")
    set(_chessrl_nccl_line "chessrl: nccl.h ${CHESSRL_NCCL_HEADER_VERSION} in ${CHESSRL_NCCL_INCLUDE} (used)")
    get_filename_component(_chessrl_nccl_used "${CHESSRL_NCCL_INCLUDE}" ABSOLUTE)
    if(_chessrl_nccl_other AND NOT _chessrl_nccl_other STREQUAL _chessrl_nccl_used)
      _chessrl_nccl_version("${_chessrl_nccl_other}" _chessrl_other_version)
      string(APPEND _chessrl_nccl_line ", nccl.h ${_chessrl_other_version} in ${_chessrl_nccl_other} (not used)")
      if(NOT _chessrl_other_version STREQUAL CHESSRL_NCCL_HEADER_VERSION)
        message(WARNING
          "chessrl: two versions of nccl.h: ${CHESSRL_NCCL_HEADER_VERSION} in ${CHESSRL_NCCL_INCLUDE} "
          "(used) and ${_chessrl_other_version} in ${_chessrl_nccl_other}. The one used must be "
          "the version of the libnccl.so.2 that LibTorch loads (`chessrl doctor` prints it); "
          "-DCHESSRL_NCCL_INCLUDE=DIR picks the other.")
      endif()
    endif()
  else()
    list(JOIN _chessrl_nccl_hints ", " _chessrl_nccl_looked)
    if(_chessrl_cuda STREQUAL "ON")
      message(FATAL_ERROR
        "CHESSRL_CUDA=ON, but nccl.h was not found (LibTorch has CUDA). Looked in "
        "${_chessrl_nccl_looked} and the system's include folders. Install NCCL's headers "
        "(Debian: libnccl-dev; beside a PyTorch wheel: the nvidia-nccl wheel) or name "
        "the folder with -DCHESSRL_NCCL_INCLUDE=DIR, or configure with CHESSRL_CUDA=AUTO or OFF")
    endif()
    string(CONCAT _chessrl_cuda_why
           "LibTorch has CUDA but nccl.h was not found (looked in ${_chessrl_nccl_looked} and the "
           "system's include folders): training uses Gloo only")
  endif()
endif()

if(CHESSRL_CUDA_ENABLED)
  chessrl_configure_fact("chessrl: CUDA-only code (NCCL) built: CHESSRL_CUDA=${CHESSRL_CUDA}, ${_chessrl_cuda_why}")
  chessrl_configure_fact("${_chessrl_nccl_line}")
else()
  chessrl_configure_fact("chessrl: CUDA-only code (NCCL) not built: CHESSRL_CUDA=${CHESSRL_CUDA}, ${_chessrl_cuda_why}")
endif()
