// Small helpers the benchmark commands share: timing, medians, progress lines,
// --json output.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace chessrl::tool {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Now as Unix time in seconds: the clock a bench's --json windows are given in,
// so that a reader can line them up with samples taken by another program.
inline double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Prints `doc` (a JSON document, as text) and a newline on stdout: a bench's
// --json output, the only thing it then prints there.
inline void print_json_document(const std::string& doc) {
  std::printf("%s\n", doc.c_str());
  std::fflush(stdout);
}

// Precondition: !v.empty().
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A one-line progress note on stderr, rewritten in place, only on a terminal.
class ProgressLine {
 public:
  ProgressLine() : enabled_(::isatty(STDERR_FILENO)) {}
  ~ProgressLine() { clear(); }
  template <class... Args>
  void show(const char* format, Args... args) {
    if (!enabled_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, format, args...);
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (enabled_ && shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

}  // namespace chessrl::tool
