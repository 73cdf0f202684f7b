#include "chessrl/core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

extern char** environ;

namespace chessrl {
namespace {

// argv and envp as exec wants them, built before the child exists: after
// fork() only async-signal-safe calls are allowed (other threads may hold locks).
struct ExecArgs {
  std::string program;
  std::vector<std::string> args, environment;
  std::vector<char*> argv, envp;

  ExecArgs(std::string path, const ProcessSpec& spec) : program(std::move(path)), args(spec.argv) {
    // Our environment minus the names in `env`, then `env`.
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      const std::string_view name = entry.substr(0, entry.find('='));
      const bool replaced = std::any_of(spec.env.begin(), spec.env.end(),
                                        [&](const auto& kv) { return kv.first == name; });
      if (!replaced) environment.emplace_back(entry);
    }
    for (const auto& [name, value] : spec.env) environment.push_back(name + "=" + value);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
};

// The signals a child must not inherit as ignored (an ignored signal stays
// ignored across exec): ours may ignore SIGPIPE (Subprocess) or SIGINT.
constexpr int kDefaultSignals[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD};

// posix_spawn: no fork handlers run, no page tables copied. For what only
// code in the child can do (niceness, the parent-death signal), fork below.
int spawn_without_fork(pid_t& pid, const ExecArgs& exec, const ProcessSpec& spec, int in_fd,
                       int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (in_fd >= 0) posix_spawn_file_actions_adddup2(&actions, in_fd, STDIN_FILENO);
  if (out_fd >= 0) posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  if (err_fd >= 0) posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : kDefaultSignals) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (spec.own_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);
  const int rc = ::posix_spawn(&pid, exec.program.c_str(), &actions, &attr,
                               const_cast<char* const*>(exec.argv.data()),
                               const_cast<char* const*>(exec.envp.data()));
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  return rc;
}

// fork and exec, for a niceness or the parent-death signal; exec's errno
// comes back through a close-on-exec pipe. Returns 0 or an errno.
int spawn_with_fork(pid_t& pid, const ExecArgs& exec, const ProcessSpec& spec, int in_fd,
                    int out_fd, int err_fd) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return errno;
  const pid_t parent = ::getpid();
  pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(report[0]);
    ::close(report[1]);
    return error;
  }
  if (pid == 0) {
    if (spec.own_process_group) ::setpgid(0, 0);
    if (spec.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : kDefaultSignals) ::signal(sig, SIG_DFL);
    if (spec.nice > 0) (void)::setpriority(PRIO_PROCESS, 0, spec.nice);
    // An fd already on its target (the parent ran with 0, 1 or 2 closed) keeps
    // O_CLOEXEC through dup2: clear the flag instead, as posix_spawn does.
    const auto onto = [](int fd, int target) {
      if (fd == target) ::fcntl(fd, F_SETFD, 0);
      else ::dup2(fd, target);
    };
    if (in_fd >= 0) onto(in_fd, STDIN_FILENO);
    if (out_fd >= 0) onto(out_fd, STDOUT_FILENO);
    if (err_fd >= 0) onto(err_fd, STDERR_FILENO);
    ::execve(exec.program.c_str(), exec.argv.data(), exec.envp.data());
    const int error = errno;
    (void)!::write(report[1], &error, sizeof error);
    ::_exit(127);
  }
  // Also from the parent, so the group exists before anyone signals it.
  if (spec.own_process_group) ::setpgid(pid, pid);
  ::close(report[1]);
  int error = 0;
  ssize_t n;
  while ((n = ::read(report[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n == ssize_t(sizeof error)) {  // exec failed: the child is gone
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return error;
  }
  return 0;
}

}  // namespace

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

std::string log_tail(const std::string& path, int lines) {
  std::ifstream in(path);
  // Logs are appended across runs and restarts: read only their last 64 KiB.
  constexpr std::streamoff kTail = 64 * 1024;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size > kTail) {
    in.seekg(size - kTail);
    std::string partial;
    std::getline(in, partial);  // the line the cut fell in
  } else {
    in.seekg(0);
  }
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (int(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "    " + l + "\n";
  return out;
}

// ---- Process ----

Result<Process> Process::start(const ProcessSpec& spec) {
  return launch(spec, -1, -1, false);
}

Result<Process> Process::launch(const ProcessSpec& spec, int stdin_fd, int stdout_fd,
                                bool stderr_to_stdout) {
  if (spec.argv.empty()) return fail("no program given");
  const std::string& name = spec.argv[0];
  auto program = find_program(name);
  if (!program) {
    if (name.find('/') == std::string::npos) return fail("program '" + name + "' not found in PATH");
    return fail(name + " is not an executable file");
  }
  int in_fd = stdin_fd, out_fd = stdout_fd, err_fd = stderr_to_stdout ? stdout_fd : -1;
  int null_in = -1, log = -1;
  if (in_fd < 0 && spec.null_stdin) {
    in_fd = null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in_fd < 0) return fail(std::string("cannot open /dev/null: ") + std::strerror(errno));
  }
  if (out_fd < 0 && !spec.output_path.empty()) {
    log = ::open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log < 0) {
      const std::string why = std::strerror(errno);
      if (null_in >= 0) ::close(null_in);
      return fail("cannot open log " + spec.output_path + ": " + why);
    }
    out_fd = err_fd = log;
  }
  const ExecArgs exec(*program, spec);
  pid_t pid = -1;
  const int rc = spec.nice > 0 || spec.die_with_parent
                     ? spawn_with_fork(pid, exec, spec, in_fd, out_fd, err_fd)
                     : spawn_without_fork(pid, exec, spec, in_fd, out_fd, err_fd);
  if (null_in >= 0) ::close(null_in);
  if (log >= 0) ::close(log);
  if (rc != 0) return fail("cannot start '" + *program + "': " + std::strerror(rc));
  Process p;
  p.pid_ = pid;
  p.reaped_ = false;
  return p;
}

Process::Process(Process&& other) noexcept { *this = std::move(other); }

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    reap_now();
    pid_ = std::exchange(other.pid_, -1);
    reaped_ = std::exchange(other.reaped_, true);
    lost_ = std::exchange(other.lost_, false);
    wait_status_ = other.wait_status_;
  }
  return *this;
}

Process::~Process() { reap_now(); }

void Process::reap_now() {
  if (pid_ > 0 && !exited()) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
}

bool Process::exited() {
  if (reaped_ || pid_ <= 0) return true;
  const pid_t r = ::waitpid(pid_, &wait_status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  if (r < 0 && errno == ECHILD) reaped_ = lost_ = true;  // reaped elsewhere (SIGCHLD ignored)
  return reaped_;
}

bool Process::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!exited()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

int Process::wait() {
  if (!exited()) {
    pid_t r;
    while ((r = ::waitpid(pid_, &wait_status_, 0)) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    lost_ = r < 0;
  }
  return exit_code();
}

std::string Process::status() const {
  if (!reaped_) return "running";
  if (pid_ <= 0) return "not started";
  if (lost_) return "exit status unknown (reaped elsewhere)";
  if (WIFEXITED(wait_status_)) return "exit status " + std::to_string(WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_)) {
    const int sig = WTERMSIG(wait_status_);
    const char* name = sigabbrev_np(sig);
    return std::string("killed by ") + (name ? std::string("SIG") + name : std::to_string(sig));
  }
  return "ended";
}

bool Process::clean_exit() const { return exit_code() == 0; }

int Process::exit_code() const {
  if (!reaped_ || pid_ <= 0 || lost_) return -1;
  if (WIFEXITED(wait_status_)) return WEXITSTATUS(wait_status_);
  if (WIFSIGNALED(wait_status_)) return 128 + WTERMSIG(wait_status_);
  return -1;
}

void Process::signal(int sig) {
  if (!exited()) ::kill(pid_, sig);
}

void Process::terminate() { signal(SIGTERM); }

void Process::kill() { signal(SIGKILL); }

bool Process::stop(std::chrono::milliseconds grace) {
  if (exited()) return true;
  ::kill(pid_, SIGTERM);
  if (wait_for(grace)) return true;
  reap_now();
  return false;
}

// ---- Subprocess ----

Result<Subprocess> Subprocess::start(const std::vector<std::string>& argv) {
  return start(argv, {});
}

Result<Subprocess> Subprocess::start(const std::vector<std::string>& argv,
                                     const std::vector<std::pair<std::string, std::string>>& env) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.env = env;
  return start(spec, false);
}

Result<Subprocess> Subprocess::start(const ProcessSpec& spec, bool merge_stderr) {
  if (spec.argv.empty()) return fail("Subprocess::start: empty command");
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return fail(std::string("pipe: ") + std::strerror(errno));
  }
  auto process = Process::launch(spec, to_child[0], from_child[1], merge_stderr);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (!process.ok()) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    return fail(process.error());
  }
  // A child that exits early must not kill us with SIGPIPE on the next write.
  ::signal(SIGPIPE, SIG_IGN);
  Subprocess p;
  p.process_ = std::move(process).value();
  p.in_fd_ = to_child[1];
  p.out_fd_ = from_child[0];
  return p;
}

Subprocess::Subprocess(Subprocess&& other) noexcept { *this = std::move(other); }

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    close_all();
    process_ = std::move(other.process_);
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
  if (!process_.wait_for(std::chrono::seconds(1))) process_.kill();
  process_ = Process();  // reaps it
  if (out_fd_ >= 0) ::close(out_fd_);
  out_fd_ = -1;
}

void Subprocess::close_stdin() {
  if (in_fd_ >= 0) ::close(in_fd_);
  in_fd_ = -1;
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
