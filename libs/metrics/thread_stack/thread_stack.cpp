// Room for static TLS on threads with an explicit stack size.
//
// glibc carves each thread's static TLS (thread_local data of every library
// loaded at start-up) out of the thread's stack. LibTorch's dependencies bring
// about 100 KiB of it (OpenBLAS alone 60 KiB), and civetweb, which serves
// /metrics and /healthz, starts its threads with a fixed 100 KiB stack
// (0x19000), so in a process linked with LibTorch pthread_create fails with
// EINVAL and the Exposer throws "null context when constructing CivetServer".
// This definition interposes on pthread_attr_setstacksize for the whole
// process (the executable's symbol wins over libc's) and adds 512 KiB to every
// explicit stack size, then calls glibc's. It must be linked into the
// executable itself (not a static library, which would drop it as unused):
// the OBJECT library chessrl::thread_stack, linked PRIVATE into every program
// that serves /metrics (libs/metrics/CMakeLists.txt).
#include <dlfcn.h>
#include <pthread.h>

#include <cerrno>
#include <cstddef>

extern "C" int pthread_attr_setstacksize(pthread_attr_t* attr, std::size_t size) {
  using Fn = int (*)(pthread_attr_t*, std::size_t);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "pthread_attr_setstacksize"));
  if (real == nullptr) return ENOSYS;
  constexpr std::size_t kTlsRoom = std::size_t{512} << 10;
  return real(attr, size + kTlsRoom);
}
