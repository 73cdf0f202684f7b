// Test helpers for the service binaries (trainer, self-play, evaluator): a child
// process with its output in files, and a plain HTTP GET for /metrics and /healthz.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <utility>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/core/error.h"

extern char** environ;

namespace chessrl::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A child process with stdout and stderr in files; killed and reaped by the
// destructor if it is still running.
class Child {
 public:
  Child() = default;
  // Starts `argv` with this process's environment minus CHESSRL_* and the rank
  // variables; stdout and stderr go to <dir>/<name>.out and .err.
  Child(const std::vector<std::string>& argv, const std::string& dir, const std::string& name)
      : Child(start(argv, {}, dir, name)) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& other) noexcept { *this = std::move(other); }
  Child& operator=(Child&& other) noexcept {
    std::swap(pid_, other.pid_);
    out_ = std::move(other.out_);
    err_ = std::move(other.err_);
    return *this;
  }
  int pid() const { return pid_; }

  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // Starts `argv` (argv[0] a path) with the environment of this process minus
  // the rank variables and CHESSRL_*, plus `env`.
  static Child start(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env, const std::string& dir,
                     const std::string& name) {
    Child child;
    child.out_ = dir + "/" + name + ".out";
    child.err_ = dir + "/" + name + ".err";
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      const std::string key = entry.substr(0, entry.find('='));
      if (key == "RANK" || key == "WORLD_SIZE" || key == "MASTER_ADDR" || key == "MASTER_PORT" ||
          key == "LOCAL_RANK" || key == "GLOO_SOCKET_IFNAME" || key.rfind("CHESSRL_", 0) == 0) {
        continue;
      }
      environment.push_back(entry);
    }
    for (const auto& [key, value] : env) environment.push_back(key + "=" + value);
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, child.out_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, child.err_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int spawned =
        posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) throw Error(std::string("posix_spawn ") + argv[0] + ": " + std::strerror(spawned));
    child.pid_ = pid;
    return child;
  }

  // The exit code (128 + signal when killed by one), or nullopt when it is
  // still running after `timeout`.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  void signal(int sig) const { ::kill(pid_, sig); }
  bool running() const { return pid_ > 0; }
  std::string out() const { return slurp(out_); }
  std::string err() const { return slurp(err_); }

 private:
  pid_t pid_ = -1;
  std::string out_, err_;
};

// The whole response (status line, headers, body); "" when nothing answers.
inline std::string http_get(int port, const std::string& target) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET " + target + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
        response.append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  ::close(fd);
  return response;
}

}  // namespace chessrl::testing
