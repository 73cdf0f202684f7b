# CHESSRL_CUDA (AUTO, ON or OFF; the top CMakeLists.txt): whether the CUDA-only
# code is built. That is the code that needs CUDA's own headers, not LibTorch's
# run-time device choice (--device cuda works with the switch off): today the NCCL
# process group, libs/train/src/cuda/ (its files are listed in libs/train/CMakeLists.txt).
#   AUTO  built when LibTorch has CUDA and nccl.h is found
#   ON    the same, but configure stops, naming what is missing, when it cannot be
#   OFF   never, even with a CUDA build of LibTorch
# Included after find_package(Torch). Sets CHESSRL_TORCH_HAS_CUDA and
# CHESSRL_CUDA_ENABLED (ON/OFF) and, when the latter is ON, CHESSRL_NCCL_INCLUDE
# (nccl.h's folder; a cache variable, which can be set to point at it). Prints one
# status line: the choice and why. tests/cmake/cuda_switch_test.cmake checks each case.
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
  # nccl.h comes with the CUDA toolkit, the system (libnccl-dev) or, beside a
  # PyTorch wheel's LibTorch, the nvidia-nccl wheel.
  set(_chessrl_nccl_hints ${CUDAToolkit_INCLUDE_DIRS})
  if(CUDA_TOOLKIT_ROOT_DIR)
    list(APPEND _chessrl_nccl_hints "${CUDA_TOOLKIT_ROOT_DIR}/include")
  endif()
  foreach(_dir nvidia/nccl/include nvidia/cu13/include nvidia/cu12/include)
    get_filename_component(_hint "${TORCH_INSTALL_PREFIX}/../${_dir}" ABSOLUTE)
    list(APPEND _chessrl_nccl_hints "${_hint}")
  endforeach()
  list(REMOVE_DUPLICATES _chessrl_nccl_hints)
  find_path(CHESSRL_NCCL_INCLUDE nccl.h HINTS ${_chessrl_nccl_hints}
            DOC "The folder of nccl.h (CHESSRL_CUDA, cmake/ChessrlCuda.cmake)")
  if(CHESSRL_NCCL_INCLUDE)
    set(CHESSRL_CUDA_ENABLED ON)
    set(_chessrl_cuda_why "LibTorch has CUDA, nccl.h in ${CHESSRL_NCCL_INCLUDE}")
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
  message(STATUS "chessrl: CUDA-only code (NCCL) built: CHESSRL_CUDA=${CHESSRL_CUDA}, ${_chessrl_cuda_why}")
else()
  message(STATUS "chessrl: CUDA-only code (NCCL) not built: CHESSRL_CUDA=${CHESSRL_CUDA}, ${_chessrl_cuda_why}")
endif()
