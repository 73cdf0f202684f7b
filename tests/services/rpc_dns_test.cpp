// rpc::make_channel follows a DNS name to its new address within seconds.
// When a server moves (a pod replaced behind a headless Service, a container
// restarted with a new address), its clients' connections fail and the channel
// looks the name up again; gRPC spaces those lookups at least 30 s apart by
// default, so a lookup made while the name still pointed at the old address
// kept clients away for up to 30 s (ClientOptions::dns_min_reresolution, 1 s).
// The name is served by a private dnsmasq on a loopback port, named in the
// target ("dns://127.0.0.1:PORT/name:port"); the server moves from 127.0.0.1
// to 127.0.0.2 on the same port. About 15 s.
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/core/subprocess.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// dnsmasq answering only for the names in its hosts file, on a loopback port.
// It cannot listen on port 0 and say which port it got, so the port is one
// nothing had bound a moment ago, tried again (up to 5 times) when another
// process took it first.
class DnsServer {
 public:
  DnsServer() {
    const auto binary = find_program("dnsmasq").value_or("/usr/sbin/dnsmasq");
    if (!fs::exists(binary)) {
      throw std::runtime_error("dnsmasq is not installed (Debian: dnsmasq-base; deps/apt.txt)");
    }
    std::string templ = (fs::temp_directory_path() / "chessrl-dns-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("cannot make a directory");
    dir_ = templ;
    write_hosts("");
    for (int attempt = 0; attempt < 5; ++attempt) {
      port_ = unused_udp_port();
      if (launch(binary)) return;
    }
    throw std::runtime_error("dnsmasq: every port tried was taken");
  }
  ~DnsServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  DnsServer(const DnsServer&) = delete;
  DnsServer& operator=(const DnsServer&) = delete;

  int port() const { return port_; }

  // `name` resolves to `ip` from now on: the hosts file rewritten, dnsmasq told
  // (SIGHUP) and waited for until its log says it read the file again.
  void point(const std::string& name, const std::string& ip) {
    const auto reads = count(slurp(log()), "read " + hosts().string());
    write_hosts(ip + " " + name + "\n");
    ::kill(pid_, SIGHUP);
    const auto until = Clock::now() + 5s;
    while (count(slurp(log()), "read " + hosts().string()) <= reads) {
      if (Clock::now() > until) throw std::runtime_error("dnsmasq did not reread " + hosts().string());
      std::this_thread::sleep_for(10ms);
    }
  }

 private:
  fs::path hosts() const { return dir_ / "hosts"; }
  fs::path log() const { return dir_ / "dnsmasq.log"; }

  void write_hosts(const std::string& text) {
    const auto next = dir_ / "hosts.next";
    std::ofstream(next) << text;
    fs::rename(next, hosts());
  }

  static int unused_udp_port() {
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) != 0) {
      ::close(fd);
      throw std::runtime_error("cannot bind a UDP socket on 127.0.0.1");
    }
    ::close(fd);
    return ntohs(a.sin_port);
  }

  // Starts dnsmasq on port_; true once it serves, false when the port was
  // taken; throws on any other failure.
  bool launch(const std::string& binary) {
    // It stays this user (as root it would switch to "nobody", who cannot read
    // the hosts file in this private directory).
    const passwd* user = ::getpwuid(::geteuid());
    const group* grp = ::getgrgid(::getegid());
    std::vector<std::string> argv = {binary,
                                     "--keep-in-foreground",
                                     "--conf-file=/dev/null",
                                     "--no-resolv",
                                     "--no-hosts",
                                     "--addn-hosts=" + hosts().string(),
                                     "--listen-address=127.0.0.1",
                                     "--bind-interfaces",
                                     "--port=" + std::to_string(port_),
                                     "--pid-file=",
                                     "--log-facility=" + log().string(),
                                     std::string("--user=") + (user ? user->pw_name : "root"),
                                     std::string("--group=") + (grp ? grp->gr_name : "root")};
    const auto err = dir_ / "stderr";
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      if (!std::freopen(err.c_str(), "w", stderr)) std::_Exit(127);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      std::_Exit(127);
    }
    const auto until = Clock::now() + 10s;
    while (Clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        const auto why = slurp(err) + slurp(log());
        if (why.find("Address already in use") != std::string::npos) return false;
        throw std::runtime_error("dnsmasq exited: " + why);
      }
      if (slurp(log()).find("read " + hosts().string()) != std::string::npos) return true;
      std::this_thread::sleep_for(10ms);
    }
    throw std::runtime_error("dnsmasq did not start within 10 s: " + slurp(err) + slurp(log()));
  }

  fs::path dir_;
  int port_ = 0;
  int pid_ = -1;
};

struct Served {
  replay::MemoryReplayStore games{1000};
  replay::MemoryModelStore models;
  metrics::Registry registry;
  std::unique_ptr<ReplayServer> server;
  explicit Served(const std::string& listen) {
    auto options = testing::fast_server_options();
    options.listen = listen;
    server = std::make_unique<ReplayServer>(games, models, registry, options);
  }
};

constexpr const char* kName = "replay.chessrl.test";

// Serves on 127.0.0.1, pushes through the name, then moves: the server gone
// from 127.0.0.1 (the client fails and looks the name up while it still says
// 127.0.0.1), the name pointed at 127.0.0.2 and a server started there on the
// same port. Returns how long the client took to get a push through there.
std::optional<Clock::duration> move_server(std::chrono::milliseconds dns_min_reresolution,
                                           Clock::duration limit) {
  DnsServer dns;
  dns.point(kName, "127.0.0.1");
  auto first = std::make_unique<Served>("127.0.0.1:0");
  const int port = first->server->port();
  rpc::ClientOptions options = testing::single_try_client(port);
  options.address = "dns://127.0.0.1:" + std::to_string(dns.port()) + "/" + kName + ":" +
                    std::to_string(port);
  options.deadline = 1s;
  options.dns_min_reresolution = dns_min_reresolution;
  rpc::ReplayClient client(options);
  const auto pushed = client.push_games(testing::one_game("before"));
  if (!pushed.ok()) throw std::runtime_error("the first push failed: " + pushed.error());

  first.reset();
  for (int i = 0; i < 10; ++i) {  // failing calls: the channel looks the name up again
    EXPECT_FALSE(client.push_games(testing::one_game("while-gone-" + std::to_string(i))).ok());
    std::this_thread::sleep_for(100ms);
  }
  dns.point(kName, "127.0.0.2");
  Served second("127.0.0.2:" + std::to_string(port));
  const auto took = testing::push_until_answered(client, limit, 50ms);
  if (took) {
    auto stats = second.games.stats();
    EXPECT_TRUE(stats.ok() && stats.value().games_total == 1u);
  }
  return took;
}

TEST(RpcDnsTest, AClientFollowsANameToItsNewAddressWithinSeconds) {
  const auto took = move_server(rpc::ClientOptions{}.dns_min_reresolution, 20s);
  ASSERT_TRUE(took.has_value()) << "no push reached the server at the name's new address in 20 s";
  EXPECT_LT(*took, 6s) << std::chrono::duration<double>(*took).count() << " s";
}

TEST(RpcDnsTest, WithGrpcsDefaultSpacingTheClientStaysOnTheOldAddress) {
  // gRPC's default, 30 s between lookups: what the test above guards against.
  EXPECT_FALSE(move_server(30000ms, 8s).has_value());
}

}  // namespace
}  // namespace chessrl::replay_service
