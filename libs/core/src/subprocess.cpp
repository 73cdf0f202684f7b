#include "chessrl/core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>
#include <thread>

extern char** environ;

namespace chessrl {

std::optional<std::string> find_program(const std::string& name) {
  auto executable = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (executable(name)) return name;
    return std::nullopt;
  }
  const char* env_path = std::getenv("PATH");
  std::string path = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
  path += ":/usr/games";
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (executable(candidate)) return candidate;
  }
  return std::nullopt;
}

Result<Subprocess> Subprocess::start(const std::vector<std::string>& argv) {
  return start(argv, {});
}

Result<Subprocess> Subprocess::start(const std::vector<std::string>& argv,
                                     const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty()) return fail("Subprocess::start: empty command");
  auto program = find_program(argv[0]);
  if (!program) return fail("program '" + argv[0] + "' not found in PATH");

  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return fail(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Our environment minus the names in `env`, then `env`.
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool replaced = std::any_of(env.begin(), env.end(),
                                      [&](const auto& kv) { return kv.first == name; });
    if (!replaced) environment.emplace_back(entry);
  }
  for (const auto& [name, value] : env) environment.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, program->c_str(), &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (rc != 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    return fail("cannot start '" + *program + "': " + std::strerror(rc));
  }
  // A child that exits early must not kill us with SIGPIPE on the next write.
  ::signal(SIGPIPE, SIG_IGN);
  Subprocess p;
  p.pid_ = pid;
  p.in_fd_ = to_child[1];
  p.out_fd_ = from_child[0];
  return p;
}

Subprocess::Subprocess(Subprocess&& other) noexcept { *this = std::move(other); }

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    close_all();
    pid_ = std::exchange(other.pid_, -1);
    in_fd_ = std::exchange(other.in_fd_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

Subprocess::~Subprocess() { close_all(); }

void Subprocess::close_all() {
  if (in_fd_ >= 0) ::close(in_fd_);
  in_fd_ = -1;
  if (pid_ > 0) {
    int status = 0;
    bool reaped = false;
    for (int i = 0; i < 100 && !reaped; ++i) {
      reaped = ::waitpid(pid_, &status, WNOHANG) == pid_;
      if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!reaped) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  pid_ = -1;
  if (out_fd_ >= 0) ::close(out_fd_);
  out_fd_ = -1;
}

bool Subprocess::write_line(const std::string& line) {
  if (in_fd_ < 0) return false;
  std::string data = line + "\n";
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(in_fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

std::optional<std::string> Subprocess::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    if (out_fd_ < 0) return std::nullopt;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd pfd{out_fd_, POLLIN, 0};
    int ready = ::poll(&pfd, 1, int(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char chunk[4096];
    ssize_t n = ::read(out_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(out_fd_);
      out_fd_ = -1;
      continue;  // return what is buffered, then nullopt
    }
    buffer_.append(chunk, size_t(n));
  }
}

}  // namespace chessrl
