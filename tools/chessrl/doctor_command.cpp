// chessrl doctor: what this machine can do, one fact a line (or one JSON
// object with --json): CPU and memory, LibTorch, GPUs (NVML), NCCL, Redis and
// the programs the loop uses, the default ports, and an estimate of the
// games per hour `make run` (`chessrl local`) would play here, from a short
// self-play run with its settings. Missing things are reported, not errors:
// it exits 0.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend_setup.h"
#include "bench/util.h"
#include "chessrl/core/gpu_info.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/network_config.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/selfplay/game_runner.h"
#include "commands.h"
#include "local/defaults.h"
#include "local/settings.h"

namespace chessrl::tool {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

struct DoctorOptions {
  std::string redis = "127.0.0.1:6379";
  double seconds = 10;
  bool no_estimate = false;
  bool json = false;
};

// The ports the loop listens on by default: Redis, replay gRPC, /metrics
// (9100 + n), trainer rendezvous.
constexpr int kPorts[] = {6379, 50051, 9100, 9101, 9102, 9103, 9104, 29500};
constexpr int kAssumedPlies = 120;

// Facts, printed one a line as they come, or gathered into one JSON object.
class Report {
 public:
  explicit Report(bool json_mode) : json_mode_(json_mode) {}
  void line(const std::string& text) {
    if (json_mode_) return;
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
  }
  json& data() { return data_; }
  void finish() {
    if (json_mode_) std::printf("%s\n", data_.dump(2).c_str());
  }

 private:
  bool json_mode_;
  json data_ = json::object();
};

std::string sformat(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string gib(std::uint64_t bytes) { return sformat("%.1f", double(bytes) / double(1ull << 30)); }

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

// "Connection refused" -> "connection refused"
std::string error_text(int error) {
  std::string text = std::strerror(error);
  if (!text.empty()) text[0] = char(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

// --- CPU, memory, LibTorch, GPUs, NCCL ---------------------------------------

void report_cpu(Report& r) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; model.empty() && std::getline(cpuinfo, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    if (key == "model name" || key == "Model" || key == "Hardware")
      model = trim(line.substr(colon + 1));
  }
  r.data()["cpu"] = {{"cores", cores}, {"model", model}};
  r.line(sformat("cpu: %u cores (%s)", cores, model.empty() ? "model unknown" : model.c_str()));

  std::uint64_t total_kb = 0, available_kb = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    std::uint64_t kb = 0;
    meminfo >> kb;
    if (key == "MemTotal:") total_kb = kb;
    if (key == "MemAvailable:") available_kb = kb;
    meminfo.ignore(64, '\n');
  }
  r.data()["memory"] = {{"total_bytes", total_kb << 10}, {"available_bytes", available_kb << 10}};
  r.line("memory: " + gib(total_kb << 10) + " GiB, " + gib(available_kb << 10) + " GiB available");
}

void report_torch(Report& r) {
  const nn::TorchInfo t = nn::torch_info();
  r.data()["libtorch"] = {{"version", t.version},
                          {"cuda_build", t.cuda_build},
                          {"cuda_devices", t.cuda_devices},
                          {"threads", t.cpu_threads}};
  std::string build = t.cuda_build ? sformat("CUDA build, %d GPU(s) visible", t.cuda_devices)
                                   : std::string("CPU build (no CUDA)");
  r.line("libtorch: " + t.version + ", " + build +
         sformat(", %d intra-op thread(s)", t.cpu_threads));
}

void report_gpus(Report& r) {
  const GpuQuery q = query_gpus();
  json devices = json::array();
  for (const GpuInfo& g : q.gpus) {
    devices.push_back({{"index", g.index},
                       {"name", g.name},
                       {"memory_total_bytes", g.memory_total_bytes},
                       {"memory_used_bytes", g.memory_used_bytes},
                       {"utilization", g.utilization}});
  }
  r.data()["gpus"] = {{"nvml", q.nvml_loaded},
                      {"driver_version", q.driver_version},
                      {"devices", devices},
                      {"error", q.error}};
  if (q.gpus.empty()) {
    std::string why = q.error;
    if (why.empty()) why = "the NVIDIA driver " + q.driver_version + " reports none";
    r.line("gpus: none (" + why + ")");
    return;
  }
  r.line(sformat("gpus: %zu (NVIDIA driver %s)", q.gpus.size(), q.driver_version.c_str()));
  for (const GpuInfo& g : q.gpus) {
    const std::string use =
        g.utilization >= 0 ? sformat("%.0f%%", 100 * g.utilization) : std::string("not reported");
    r.line(sformat("gpu %d: %s, memory %s/%s GiB used, utilization %s", g.index, g.name.c_str(),
                   gib(g.memory_used_bytes).c_str(), gib(g.memory_total_bytes).c_str(),
                   use.c_str()));
  }
  if (!q.error.empty()) r.line("gpus: " + q.error);
}

void report_nccl(Report& r) {
  const NcclInfo n = query_nccl();
  r.data()["nccl"] = {{"found", n.found},
                      {"library", n.library},
                      {"path", n.path},
                      {"version", n.version},
                      {"error", n.error}};
  if (!n.found) {
    r.line("nccl: not found (" + n.library + ")");
  } else if (n.version.empty()) {
    r.line("nccl: found " + n.library + " (" + n.error + ")");
  } else {
    r.line("nccl: found " + n.library + " (version " + n.version + ")");
  }
}

// --- Programs -----------------------------------------------------------------

// The first line `command` prints (stdout and stderr), within 3 s.
std::string first_line(const std::string& command) {
  auto child = Subprocess::start({"sh", "-c", command + " 2>&1"});
  if (!child.ok()) return "";
  for (;;) {
    auto line = child->read_line(3s);
    if (!line) return "";
    if (!trim(*line).empty()) return trim(*line);
  }
}

// The word after `marker` in `text` up to `end` ("" when absent).
std::string after(const std::string& text, const std::string& marker, const std::string& end) {
  const auto at = text.find(marker);
  if (at == std::string::npos) return "";
  const auto start = at + marker.size();
  return text.substr(start, text.find(end, start) - start);
}

void report_program(Report& r, const std::string& name, const std::string& install) {
  const auto path = find_program(name);
  std::string version;
  if (path) {
    const std::string quoted = "'" + *path + "'";
    if (name == "stockfish") {
      version = after(first_line(quoted + " </dev/null"), "", " by ");
    } else if (name == "promtool") {
      version = after(first_line(quoted + " --version"), "version ", " ");
    } else {
      version = after(first_line(quoted + " --version"), "v=", " ");
    }
  }
  r.data()["programs"][name] = {
      {"found", path.has_value()}, {"path", path.value_or("")}, {"version", version}};
  if (!path) {
    r.line(name + ": not found (" + install + ")");
  } else {
    r.line(name + ": " + *path + (version.empty() ? "" : " (" + version + ")"));
  }
}

// --- Redis and ports -----------------------------------------------------------

struct RedisProbe {
  std::string status;  // reachable, needs_password, unreachable, unexpected_reply, bad_address
  std::string text;    // for people: "reachable (PONG)"
};

// A TCP connect with a 1 s timeout, then "PING"; the first line of the reply.
RedisProbe probe_redis(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    return {"bad_address", "bad address (expected HOST:PORT)"};
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return {"unreachable", std::string("not reachable (") + ::gai_strerror(rc) + ")"};
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return {"unreachable", "not reachable (socket: " + error_text(errno) + ")"};
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  auto wait = [fd](short events) {
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, 1000) == 1;
  };
  if (::connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return {"unreachable", "not reachable (" + error_text(errno) + ")"};
    if (!wait(POLLOUT)) return {"unreachable", "not reachable (no answer within 1 s)"};
    int error = 0;
    socklen_t size = sizeof error;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
    if (error != 0) return {"unreachable", "not reachable (" + error_text(error) + ")"};
  }
  const char ping[] = "PING\r\n";
  if (::send(fd, ping, sizeof ping - 1, MSG_NOSIGNAL) != ssize_t(sizeof ping - 1))
    return {"unreachable", "not reachable (" + error_text(errno) + ")"};
  std::string reply;
  const auto deadline = std::chrono::steady_clock::now() + 1s;
  while (reply.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    if (!wait(POLLIN)) break;
    char buf[256];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    reply.append(buf, std::size_t(n));
  }
  reply = trim(reply.substr(0, reply.find('\n')));
  if (reply == "+PONG") return {"reachable", "reachable (PONG)"};
  if (reply.rfind("-NOAUTH", 0) == 0) return {"needs_password", "needs a password (NOAUTH)"};
  if (reply.empty()) return {"unexpected_reply", "connected, but no reply to PING within 1 s"};
  return {"unexpected_reply", "replied: " + reply};
}

// Whether a server could listen on 127.0.0.1:port now.
bool port_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as servers do
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok =
      ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd, 1) == 0;
  ::close(fd);
  return ok;
}

void report_network(Report& r, const DoctorOptions& o) {
  const RedisProbe redis = probe_redis(o.redis);
  r.data()["redis"] = {{"address", o.redis}, {"status", redis.status}, {"detail", redis.text}};
  r.line("redis at " + o.redis + ": " + redis.text);
  std::string line = "ports:";
  for (const int port : kPorts) {
    const bool free = port_free(port);
    r.data()["ports"][std::to_string(port)] = free ? "free" : "in use";
    line += sformat(" %d %s,", port, free ? "free" : "in use");
  }
  line.pop_back();
  r.line(line);
}

// --- The games/hour estimate ------------------------------------------------------

// Self-play as `make run` plays it: one process with a search thread and an
// evaluator worker (one LibTorch thread each) per core (local/settings.h's
// auto_selfplay_threads), local/defaults.h's games at once,
// self-play's own settings (SelfPlayConfig's defaults) and the trainer's
// network (nn::kDefaultNet) with fresh random weights.
void report_estimate(Report& r, double seconds) {
  namespace d = local_defaults;
  BackendSetup setup;
  setup.net = nn::kDefaultNet;
  setup.nn_threads = 1;
  auto backend = setup.make();
  const int threads = auto_selfplay_threads(1);
  nn::BatchEvaluatorOptions eo;
  eo.workers = threads;
  selfplay::GameRunnerOptions o;  // the self-play service's leaves and settings, as make run plays
  eo.max_batch = d::kConcurrentGames * o.leaves_per_search;
  eo.batch_timeout = std::chrono::microseconds(1000);
  o.concurrent_games = d::kConcurrentGames;
  o.threads = threads;
  o.validate().value_or_throw();

  std::fprintf(stderr, "estimate: self-play with make run's settings for %.0f s...\n", seconds);
  nn::BatchEvaluator evaluator(backend, eo);
  selfplay::GameRunner runner(evaluator, o);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> games{0}, game_plies{0};
  std::exception_ptr failure;
  const auto start = Clock::now();
  std::thread play([&] {
    try {
      runner.run(
          [&](record::GameRecord&& g) {
            game_plies += g.moves.size();
            ++games;
          },
          &stop);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  {
    ProgressLine progress;
    while (seconds_since(start) < seconds && !failure) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(0.25, seconds / 4)));
      const double t = seconds_since(start);
      progress.show("estimate: %.0f/%.0f s, %llu positions, %.1f positions/s, %llu games", t,
                    seconds, static_cast<unsigned long long>(runner.stats().positions),
                    double(runner.stats().positions) / t,
                    static_cast<unsigned long long>(games.load()));
    }
  }
  const double elapsed = seconds_since(start);
  const std::uint64_t positions = runner.stats().positions;
  stop = true;
  play.join();
  if (failure) std::rethrow_exception(failure);

  const double rate = double(positions) / elapsed;
  const bool assumed = games == 0;
  const double plies = assumed ? kAssumedPlies : double(game_plies) / double(games);
  const double per_hour = rate * 3600 / plies;
  r.data()["estimate"] = {{"seconds", elapsed},
                          {"network", nn::kDefaultNet},
                          {"positions", positions},
                          {"positions_per_second", rate},
                          {"games_finished", games.load()},
                          {"mean_plies", plies},
                          {"plies_assumed", assumed},
                          {"games_per_hour", per_hour}};
  r.line(
      sformat("self-play (%s, fresh random weights, %d games at once on %d thread(s), %d/%d "
              "visits): %.1f positions/s over %.1f s",
              nn::kDefaultNet, d::kConcurrentGames, threads, o.config.playouts.full_visits,
              o.config.playouts.reduced_visits, rate, elapsed));
  const std::string basis =
      assumed
          ? sformat("assumed %d plies per game: no game finished in %.0f s", kAssumedPlies, elapsed)
          : sformat("mean of %llu finished games: %.0f plies",
                    static_cast<unsigned long long>(games.load()), plies);
  r.line(sformat("estimated games/hour for make run: ~%.0f (%s)", per_hour, basis.c_str()));
}

void run_doctor(const DoctorOptions& o) {
  Report r(o.json);
  report_cpu(r);
  report_torch(r);
  report_gpus(r);
  report_nccl(r);
  report_program(r, "redis-server", "apt-get install redis-server");
  report_network(r, o);
  report_program(r, "promtool", "apt-get install prometheus");
  report_program(r, "stockfish", "apt-get install stockfish");
  if (!o.no_estimate) {
    try {
      report_estimate(r, o.seconds);
    } catch (const std::exception& e) {
      r.data()["estimate"] = {{"error", e.what()}};
      r.line(std::string("estimate: failed: ") + e.what());
    }
  }
  r.finish();
}

}  // namespace

void add_doctor_command(CLI::App& app) {
  auto o = std::make_shared<DoctorOptions>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "What this machine can do (CPU, LibTorch, GPUs, NCCL, Redis, ports, programs) and "
      "an estimate of the games per hour make run would play here");
  cmd->add_option("--redis", o->redis, "Redis address to try (HOST:PORT)")->capture_default_str();
  cmd->add_option("--seconds", o->seconds, "Length of the self-play run behind the estimate")
      ->check(CLI::Range(0.5, 3600.0))
      ->capture_default_str();
  cmd->add_flag("--no-estimate", o->no_estimate, "Skip the self-play estimate");
  cmd->add_flag("--json", o->json, "Print the facts as one JSON object");
  cmd->callback([o] { run_doctor(*o); });
}

}  // namespace chessrl::tool
