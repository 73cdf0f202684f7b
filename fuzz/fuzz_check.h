// What the fuzz targets share: the libFuzzer entry point every target
// defines, and FUZZ_CHECK for properties every input must keep. A failed check
// aborts, so libFuzzer saves the input as a crash and the corpus replay test
// (tests/fuzz) fails on it, like a sanitizer report does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace chessrl::fuzz {

[[noreturn]] inline void check_failed(const char* file, int line, const char* condition,
                                      const std::string& detail) {
  std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed%s%s\n", file, line, condition,
               detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace chessrl::fuzz

// FUZZ_CHECK(condition) or FUZZ_CHECK(condition, detail): detail is any
// expression convertible to std::string, evaluated only on failure.
#define FUZZ_CHECK_2(condition, detail)                                                      \
  do {                                                                                       \
    if (!(condition)) ::chessrl::fuzz::check_failed(__FILE__, __LINE__, #condition, detail); \
  } while (false)
#define FUZZ_CHECK_1(condition) FUZZ_CHECK_2(condition, std::string())
#define FUZZ_CHECK_PICK(_1, _2, name, ...) name
#define FUZZ_CHECK(...) \
  FUZZ_CHECK_PICK(__VA_ARGS__, FUZZ_CHECK_2, FUZZ_CHECK_1, unused)(__VA_ARGS__)
