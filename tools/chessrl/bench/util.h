// Small helpers the benchmark commands share: timing, medians, progress lines.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace chessrl::tool {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
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
