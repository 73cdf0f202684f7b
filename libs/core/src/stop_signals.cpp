#include "chessrl/core/stop_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "chessrl/core/error.h"

namespace chessrl {
namespace {

// Process-wide state: the signal handler can reach nothing else. Only one
// StopSignals exists at a time, so it owns all of it while it lives.
static_assert(std::atomic<bool>::is_always_lock_free, "the handler needs a lock-free flag");
std::atomic<bool> g_exists{false};
std::atomic<bool> g_flag{false};
int g_wake_read = -1, g_wake_write = -1;  // a pipe: readable once stop is requested

// Log lines, formatted before the handler is installed (it may only write(2)).
struct Message {
  char text[256];
  std::size_t size;
};
Message g_first[2], g_again[2];  // [0]: SIGTERM, [1]: SIGINT

struct sigaction g_old_term {
}, g_old_int{};
sigset_t g_old_mask;

void format(Message& m, const std::string& text) {
  m.size = std::min(text.size(), sizeof m.text - 1);
  std::memcpy(m.text, text.data(), m.size);
  m.text[m.size] = '\0';
}

// Sets the flag; true if it was already set. Async-signal-safe.
bool set_flag() {
  const bool again = g_flag.exchange(true);
  if (!again && g_wake_write >= 0) (void)!::write(g_wake_write, "x", 1);
  return again;
}

void log_signal(int signal, bool again) {
  const Message& m = (again ? g_again : g_first)[signal == SIGTERM ? 0 : 1];
  (void)!::write(STDERR_FILENO, m.text, m.size);
}

extern "C" void on_stop_signal(int signal) {
  const int saved_errno = errno;
  log_signal(signal, set_flag());
  errno = saved_errno;
}

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

StopSignals::StopSignals(std::string program, std::string what)
    : program_(std::move(program)), what_(std::move(what)) {
  if (g_exists.exchange(true)) throw Error("StopSignals: only one may exist at a time");
  g_flag = false;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    g_exists = false;
    throw Error(std::string("StopSignals: pipe: ") + std::strerror(errno));
  }
  g_wake_read = fds[0];
  g_wake_write = fds[1];
  const char* names[2] = {"SIGTERM", "SIGINT"};
  for (int i = 0; i < 2; ++i) {
    format(g_first[i], program_ + ": " + names[i] + ": " + what_ + "\n");
    format(g_again[i], program_ + ": " + names[i] + " again: already stopping\n");
  }

  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, &g_old_term);
  sigaction(SIGINT, &action, &g_old_int);

  const sigset_t set = stop_set();
  pthread_sigmask(SIG_BLOCK, &set, &g_old_mask);
  thread_ = std::thread([this] { watch(); });  // inherits the blocked mask
}

StopSignals::~StopSignals() {
  done_ = true;
  thread_.join();  // within 100 ms
  // A signal pending now goes to the handler (harmless) before the old
  // dispositions come back.
  pthread_sigmask(SIG_SETMASK, &g_old_mask, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGINT, &g_old_int, nullptr);
  const int read_end = g_wake_read, write_end = g_wake_write;
  g_wake_write = -1;
  g_wake_read = -1;
  ::close(write_end);
  ::close(read_end);
  g_exists = false;
}

const std::atomic<bool>& StopSignals::flag() const { return g_flag; }

void StopSignals::request() { set_flag(); }

bool StopSignals::wait_for(std::chrono::milliseconds timeout) const {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  while (!requested()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{g_wake_read, POLLIN, 0};
    // The pipe stays readable once written (nobody reads it), so every waiter wakes.
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (ready < 0 && errno != EINTR) return requested();
  }
  return true;
}

void StopSignals::watch() {
  const sigset_t set = stop_set();
  // Wakes every 100 ms to see whether the destructor is waiting; waking it
  // with a signal of its own is not reliable (a sender cannot be told from a
  // real kill(2) in every kernel, and a real signal must never be lost).
  const timespec tick{0, 100'000'000};
  for (;;) {
    const int signal = sigtimedwait(&set, nullptr, &tick);
    if (signal < 0) {
      if (done_) return;
      continue;  // EAGAIN (the tick) or EINTR
    }
    const bool again = set_flag();
    const char* name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
    if (again) {
      std::fprintf(stderr, "%s: %s again: already stopping\n", program_.c_str(), name);
    } else {
      std::fprintf(stderr, "%s: %s: %s\n", program_.c_str(), name, what_.c_str());
    }
    std::fflush(stderr);
  }
}

}  // namespace chessrl
