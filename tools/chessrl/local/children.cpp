#include "local/children.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <thread>

#include "chessrl/core/subprocess.h"

extern char** environ;

namespace chessrl::tool {

namespace fs = std::filesystem;

Result<std::unique_ptr<Child>> Child::start(const ChildSpec& spec) {
  if (spec.argv.empty()) return fail(spec.name + ": no program given");
  const std::string& program = spec.argv[0];
  if (::access(program.c_str(), X_OK) != 0)
    return fail(spec.name + ": " + program + " is not executable: " + std::strerror(errno));
  const int log = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return fail(spec.name + ": cannot open log " + spec.log_path + ": " + std::strerror(errno));
  const int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  // Everything the child needs is prepared here: after fork() only
  // async-signal-safe calls are allowed (other threads may hold locks).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : spec.env) replaced = replaced || k == key;
    if (!replaced) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const int nice = spec.nice;

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    if (null_in >= 0) ::close(null_in);
    return fail(spec.name + ": fork failed: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    // Signals blocked or ignored by the parent would be inherited: reset them.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    if (nice > 0) (void)::setpriority(PRIO_PROCESS, 0, nice);
    if (null_in >= 0) ::dup2(null_in, STDIN_FILENO);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    static const char kFailed[] = "chessrl local: exec failed\n";
    (void)!::write(STDERR_FILENO, kFailed, sizeof kFailed - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so it holds before we signal it
  ::close(log);
  if (null_in >= 0) ::close(null_in);
  std::unique_ptr<Child> child(new Child(spec));
  child->pid_ = pid;
  return child;
}

Child::~Child() {
  if (pid_ > 0 && !exited()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &wait_status_, 0);
  }
}

bool Child::exited() {
  if (reaped_) return true;
  if (pid_ <= 0) return true;
  const pid_t r = ::waitpid(pid_, &wait_status_, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) reaped_ = true;
  return reaped_;
}

std::string Child::status() const {
  if (!reaped_) return "running";
  if (WIFEXITED(wait_status_)) return "exit status " + std::to_string(WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_)) {
    const int sig = WTERMSIG(wait_status_);
    const char* name = sigabbrev_np(sig);
    return std::string("killed by ") + (name ? std::string("SIG") + name : std::to_string(sig));
  }
  return "ended";
}

bool Child::clean_exit() const {
  return reaped_ && WIFEXITED(wait_status_) && WEXITSTATUS(wait_status_) == 0;
}

void Child::terminate() {
  if (!exited()) ::kill(pid_, SIGTERM);
}

void Child::kill() {
  if (!exited()) ::kill(pid_, SIGKILL);
}

bool Child::stop(std::chrono::milliseconds grace) {
  if (exited()) return true;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (exited()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &wait_status_, 0);
  reaped_ = true;
  return false;
}

std::string Child::log_tail(int lines) const {
  std::ifstream in(spec_.log_path);
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

std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

Result<std::string> find_service_binary(const std::string& name, const std::string& bin_dir) {
  std::vector<fs::path> tried;
  auto usable = [](const fs::path& p) { return ::access(p.c_str(), X_OK) == 0; };
  if (!bin_dir.empty()) {
    const fs::path p = fs::path(bin_dir) / name;
    if (usable(p)) return p.string();
    return fail(name + " not found in --bin-dir " + bin_dir);
  }
  const fs::path here = executable_dir();
  const std::string short_name = name.substr(name.find('-') + 1);  // chessrl-replay -> replay
  for (const fs::path& p : {here / name, here / ".." / ".." / "services" / short_name / name}) {
    if (usable(p)) return fs::weakly_canonical(p).string();
    tried.push_back(p);
  }
  if (auto found = find_program(name)) return *found;
  std::string where;
  for (const auto& p : tried) where += p.string() + ", ";
  return fail(name + " not found (looked in " + where + "and PATH); build it (make) or give --bin-dir");
}

}  // namespace chessrl::tool
