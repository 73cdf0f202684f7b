#include "chessrl/harness/redis_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "chessrl/core/error.h"
#include "chessrl/core/files.h"
#include "chessrl/core/subprocess.h"

namespace chessrl::harness {
namespace {

using namespace std::chrono_literals;

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

// The last `max_bytes` of a file, for error messages.
std::string tail(const std::string& path, std::size_t max_bytes = 2000) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "(no " + path + ")";
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.size() > max_bytes) text = "..." + text.substr(text.size() - max_bytes);
  return text;
}

// True when something accepts TCP connections on 127.0.0.1:`port` (checked
// before running redis-cli, which would print connection errors).
bool port_accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool accepted = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return accepted;
}

// `value` as one redis.conf argument: in double quotes, with the escapes
// Redis's config parser (sdssplitargs) undoes.
std::string redis_quote(const std::string& value) {
  std::string out = "\"";
  for (const char c : value) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Whether INFO server's text says process_id:`pid`.
bool serves_pid(const std::string& info, int pid) {
  const std::string key = "process_id:" + std::to_string(pid);
  const std::size_t at = info.find(key);
  if (at == std::string::npos) return false;
  const std::size_t end = at + key.size();
  return end == info.size() || !std::isdigit(static_cast<unsigned char>(info[end]));
}

// A TCP port on 127.0.0.1 that nothing listened on a moment ago (bound and
// released: by the time redis-server binds it another process may have taken
// it, and RedisServer::start tries another). Private: a test's "nothing
// listens there" holds its port (tests/support/refusing_port.h), and a server
// that can listen on 127.0.0.1:0 says which port it got.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(std::string("free_port: socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string reason = std::strerror(errno);
    close(fd);
    throw Error("free_port: " + reason);
  }
  close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

std::unique_ptr<RedisServer> RedisServer::start(Options options) {
  if (!find_program("redis-server")) {
    throw Error("redis-server is not installed (not found in PATH); apt-get install redis-server");
  }
  std::unique_ptr<RedisServer> server(new RedisServer());
  server->options_ = std::move(options);
  std::string dir_template = "/tmp/chessrl-redis-XXXXXX";
  if (mkdtemp(dir_template.data()) == nullptr) {
    throw Error(std::string("RedisServer: mkdtemp: ") + std::strerror(errno));
  }
  server->dir_ = dir_template;
  // free_port() only says the port was free a moment ago: another process
  // may take it before redis-server binds it. Then redis-server exits saying
  // so, and it starts again on another port.
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    server->port_ = server->options_.pick_port ? server->options_.pick_port() : 0;
    if (server->port_ == 0) server->port_ = free_port();
    // On failure the destructor removes the directory.
    if (server->launch(/*port_taken_ok=*/attempt < kAttempts)) return server;
  }
}

RedisServer::~RedisServer() {
  process_.stop(5s);
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

bool RedisServer::launch(bool port_taken_ok) {
  const std::string log = dir_ + "/redis.log";
  const std::string output = dir_ + "/stdout.log";
  // The settings, the password among them, go in a file only we can read (in
  // the mkdtemp directory, itself 0700): on the command line ps would show them.
  const std::string conf = dir_ + "/redis.conf";
  std::string text = "port " + std::to_string(port_) +
                     "\nbind 127.0.0.1\ndir " + redis_quote(dir_) +
                     "\nappendonly " + (options_.appendonly ? "yes" : "no") +
                     "\nappendfsync " + options_.appendfsync +
                     "\nsave \"\"\ndaemonize no\nprotected-mode yes\nlogfile " + redis_quote(log) +
                     // DEBUG SLEEP, for tests of a server that stops answering.
                     "\nenable-debug-command local\n";
  if (!options_.password.empty()) text += "requirepass " + redis_quote(options_.password) + "\n";
  for (const std::string& line : options_.extra_config) text += line + "\n";
  write_private_file(conf, text).value_or_throw();
  ProcessSpec spec;
  spec.argv = {"redis-server", conf};
  spec.output_path = output;
  spec.null_stdin = true;
  auto started = Process::start(spec);
  if (!started.ok()) throw Error("redis-server: " + started.error());
  process_ = std::move(started).value();

  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    if (process_.exited()) {
      process_ = Process();
      const std::string said = tail(output) + "\n" + tail(log);
      if (port_taken_ok && said.find("Address already in use") != std::string::npos) return false;
      throw Error("redis-server on port " + std::to_string(port_) + " exited at start:\n" + said);
    }
    // Ours answering, not whatever else listens there: INFO names the pid.
    if (port_accepts(port_) && serves_pid(cli({"INFO", "server"}), process_.pid())) return true;
    if (std::chrono::steady_clock::now() > deadline) {
      kill();
      throw Error("redis-server on port " + std::to_string(port_) +
                  " did not answer PING within 10 s:\n" + tail(output) + "\n" + tail(log));
    }
    std::this_thread::sleep_for(20ms);
  }
}

void RedisServer::kill() {
  process_ = Process();  // SIGKILL and reaped
}

void RedisServer::restart() {
  if (running()) kill();
  (void)launch(/*port_taken_ok=*/false);  // throws unless up
}

std::string RedisServer::cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  // The password in redis-cli's environment, not on its command line.
  std::vector<std::pair<std::string, std::string>> env;
  if (!options_.password.empty()) env.emplace_back("REDISCLI_AUTH", options_.password);
  auto process = Subprocess::start(argv, env);
  if (!process.ok()) throw Error("redis-cli: " + process.error());
  std::string out;
  while (auto line = process->read_line(10s)) {
    if (!out.empty()) out += '\n';
    out += *line;
  }
  return trim(out);
}

}  // namespace chessrl::harness
