# cmake -P: a stand-in for a PyTorch wheel's LibTorch, laid over a real LibTorch
# (Debian's), for the tests that must see what a GPU machine's build sees:
#
#   cmake -DOUT=DIR -DTORCH_DIR=<real LibTorch's share/cmake/Torch>
#         -DPROTOBUF_INCLUDE=<folder holding google/protobuf> -P fake_torch_wheel.cmake
#
# writes DIR/torch/{share/cmake/Torch,share/cmake/Caffe2,include}, the layout of a
# wheel's torch/ folder (configure with -DCMAKE_PREFIX_PATH=DIR/torch/share/cmake).
# On the two points where a wheel's LibTorch breaks a build that also uses
# gRPC and Protocol Buffers, the stand-in behaves as the wheel does (PyTorch 2.x
# wheels link a private Protocol Buffers, CAFFE2_LINK_LOCAL_PROTOBUF):
#   1. DIR/torch/include holds a Protocol Buffers of an older version
#      (google/protobuf, reporting 3.13.0, the version PyTorch vendors), and that
#      folder is on the include path of the torch targets, before anything a
#      target links after LibTorch;
#   2. its Caffe2Config.cmake defines protobuf::libprotobuf as an empty INTERFACE
#      placeholder when no such target exists yet, so a find_package(Protobuf)
#      that runs after it leaves the placeholder in place and nothing links
#      libprotobuf.
# The headers of (1) are PROTOBUF_INCLUDE's with their version macros set back to
# 3.13.0: every .pb.h that protoc 3.21 wrote stops at its version check against them.
# Everything else (the libraries, the real headers, the targets) is the real
# LibTorch's, found through TORCH_DIR.
cmake_minimum_required(VERSION 3.22)
foreach(_var OUT TORCH_DIR PROTOBUF_INCLUDE)
  if(NOT ${_var})
    message(FATAL_ERROR "fake_torch_wheel.cmake: -D${_var}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${TORCH_DIR}/TorchConfig.cmake")
  message(FATAL_ERROR "fake_torch_wheel.cmake: no TorchConfig.cmake in ${TORCH_DIR}")
endif()
if(NOT EXISTS "${PROTOBUF_INCLUDE}/google/protobuf/stubs/common.h")
  message(FATAL_ERROR "fake_torch_wheel.cmake: no google/protobuf/stubs/common.h in ${PROTOBUF_INCLUDE}")
endif()
get_filename_component(_caffe2_dir "${TORCH_DIR}/../Caffe2" ABSOLUTE)
if(NOT EXISTS "${_caffe2_dir}/Caffe2Config.cmake")
  message(FATAL_ERROR "fake_torch_wheel.cmake: no Caffe2Config.cmake beside ${TORCH_DIR}")
endif()

set(_torch "${OUT}/torch")
file(REMOVE_RECURSE "${_torch}")
file(MAKE_DIRECTORY "${_torch}/include/google" "${_torch}/share/cmake/Torch" "${_torch}/share/cmake/Caffe2")

# (1) The older Protocol Buffers: the real headers, their version set back.
file(COPY "${PROTOBUF_INCLUDE}/google/protobuf" DESTINATION "${_torch}/include/google"
     FILES_MATCHING PATTERN "*.h" PATTERN "*.inc" PATTERN "*.proto")
foreach(_pair "stubs/common.h|GOOGLE_PROTOBUF_VERSION" "port_def.inc|PROTOBUF_VERSION")
  string(REPLACE "|" ";" _pair "${_pair}")
  list(GET _pair 0 _file)
  list(GET _pair 1 _macro)
  set(_path "${_torch}/include/google/protobuf/${_file}")
  file(READ "${_path}" _text)
  string(REGEX REPLACE "#define ${_macro} [0-9]+" "#define ${_macro} 3013000" _new "${_text}")
  if(_new STREQUAL _text)
    message(FATAL_ERROR "fake_torch_wheel.cmake: no '#define ${_macro} N' in ${_path}")
  endif()
  file(WRITE "${_path}" "${_new}")
endforeach()

# (2) Caffe2Config.cmake: the placeholder first, then the real one for its targets.
file(WRITE "${_torch}/share/cmake/Caffe2/Caffe2Config.cmake" "\
# Written by tests/cmake/fake_torch_wheel.cmake: a PyTorch wheel's Caffe2Config.cmake
# as far as Protocol Buffers go, over the real one in ${_caffe2_dir}.
include_guard(GLOBAL)
if(NOT TARGET protobuf::libprotobuf)
  # What a wheel built with its own Protocol Buffers does: an empty stand-in.
  add_library(dummy INTERFACE)
  add_library(protobuf::libprotobuf ALIAS dummy)
endif()
include(\"${_caffe2_dir}/Caffe2Config.cmake\")
")

# TorchConfig.cmake: the real one (which finds Caffe2 through Caffe2_DIR: the
# stand-in above), then the wheel's include folder first on the torch targets.
file(WRITE "${_torch}/share/cmake/Torch/TorchConfig.cmake" "\
# Written by tests/cmake/fake_torch_wheel.cmake: a PyTorch wheel's TorchConfig.cmake
# as far as Protocol Buffers go, over the real one in ${TORCH_DIR}.
get_filename_component(_chessrl_fake_prefix \"\${CMAKE_CURRENT_LIST_DIR}/../../..\" ABSOLUTE)
set(Caffe2_DIR \"\${_chessrl_fake_prefix}/share/cmake/Caffe2\" CACHE PATH \"Caffe2 (fake wheel)\" FORCE)
include(\"${TORCH_DIR}/TorchConfig.cmake\")
set(TORCH_INSTALL_PREFIX \"\${_chessrl_fake_prefix}\")
list(PREPEND TORCH_INCLUDE_DIRS \"\${_chessrl_fake_prefix}/include\")
foreach(_chessrl_t torch torch_cpu)
  if(TARGET \${_chessrl_t})
    get_target_property(_chessrl_inc \${_chessrl_t} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _chessrl_inc)
      set(_chessrl_inc \"\")
    endif()
    list(PREPEND _chessrl_inc \"\${_chessrl_fake_prefix}/include\")
    set_target_properties(\${_chessrl_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES \"\${_chessrl_inc}\")
  endif()
endforeach()
set(TORCH_FOUND TRUE)
")
message(STATUS "fake wheel: ${_torch} (LibTorch of ${TORCH_DIR}, Protocol Buffers headers "
               "of ${PROTOBUF_INCLUDE} reporting 3.13.0, the empty protobuf::libprotobuf)")
