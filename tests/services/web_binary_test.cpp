// The chessrl-web binary (integration) against fake sources on loopback: a
// self-play pod whose game grows, one that answers garbage, and an evaluator
// that goes away and comes back. It serves the page and every file it embeds
// with their types, the snapshot of what the sources said, refuses anything
// but GET and HEAD, keeps the evaluator's last answer while it is down, and
// stops on SIGTERM with status 0.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "assets.h"
#include "chessrl/metrics/exposer.h"
#include "chessrl/metrics/registry.h"
#include "child_process.h"

namespace chessrl::web_service {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using chessrl::testing::Child;

const std::string kStart = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

// The body after the headers of a raw HTTP response.
std::string body_of(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

std::string raw_request(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
  }
  ::close(fd);
  return out;
}

bool wait_until(const std::function<bool()>& done, std::chrono::seconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

TEST(WebBinary, ServesThePageAndWhatItsSourcesSay) {
  const fs::path dir = fs::temp_directory_path() / ("web-binary-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  metrics::Registry registry;
  std::atomic<int> plies{1};
  metrics::Exposer pod_a(registry, "127.0.0.1:0");
  pod_a.handle("/live", [&plies](const std::string&) {
    Json moves = Json::array();
    for (int i = 0; i < plies.load(); ++i) moves.push_back(i % 2 ? "g8f6" : "g1f3");
    const Json live = {{"pod", "pod-a"},
                       {"model_version", 3},
                       {"games_finished", 9},
                       {"game",
                        {{"id", "x"},
                         {"start_fen", kStart},
                         {"moves", moves},
                         {"in_progress", true},
                         {"result", "*"}}}};
    return metrics::HttpResponse{200, "application/json", live.dump()};
  });
  metrics::Exposer pod_b(registry, "127.0.0.1:0");
  pod_b.handle("/live", [](const std::string&) {
    return metrics::HttpResponse{200, "application/json", "{\"pod\": [unterminated"};
  });
  const auto evaluator_handler = [](const std::string&) {
    return metrics::HttpResponse{
        200, "application/json",
        R"({"best_version":2,"matches":[{"candidate":2,"opponent":"random","elo":100,"lower":20,"upper":180}],"gating":null,"gauntlet":null})"};
  };
  auto evaluator = std::make_unique<metrics::Exposer>(registry, "127.0.0.1:0");
  evaluator->handle("/matches", evaluator_handler);
  const int evaluator_port = evaluator->port();

  Child web({CHESSRL_WEB_BINARY, "--listen", "127.0.0.1:0", "--selfplay",
             "127.0.0.1:" + std::to_string(pod_a.port()) + ",127.0.0.1:" +
                 std::to_string(pod_b.port()),
             "--evaluator", "127.0.0.1:" + std::to_string(evaluator_port), "--poll-interval",
             "0.2"},
            dir.string(), "web");
  int port = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        std::smatch m;
        const std::string err = web.err();
        if (!std::regex_search(err, m, std::regex("the page on port ([0-9]+)"))) return false;
        port = std::stoi(m[1]);
        return true;
      },
      std::chrono::seconds(10)))
      << web.err();
  const auto state = [&] { return Json::parse(body_of(testing::http_get(port, "/api/state")), nullptr, false); };
  ASSERT_TRUE(wait_until(
      [&] {
        const Json s = state();
        return s.is_object() && s["boards"].size() == 1 && s["sources"]["evaluator"]["ok"] == true;
      },
      std::chrono::seconds(10)))
      << testing::http_get(port, "/api/state");
  Json s = state();
  EXPECT_EQ(s["boards"][0]["pod"], "pod-a");
  EXPECT_EQ(s["boards"][0]["model_version"], 3);
  EXPECT_EQ(s["sources"]["selfplay"]["pods"], 1);
  EXPECT_EQ(s["sources"]["selfplay"]["unreachable"], 1);
  EXPECT_NE(s["sources"]["selfplay"]["error"].get<std::string>().find("not a JSON object"),
            std::string::npos);
  EXPECT_EQ(s["evaluator"]["matches"][0]["elo"], 100);

  // A move played appears within a poll or two.
  plies = 5;
  EXPECT_TRUE(wait_until([&] { return state()["boards"][0]["game"]["moves"].size() == 5; },
                         std::chrono::seconds(5)));

  // The evaluator restarts: its last answer stays, marked not ok, until it is back.
  evaluator.reset();
  ASSERT_TRUE(wait_until([&] { return state()["sources"]["evaluator"]["ok"] == false; },
                         std::chrono::seconds(5)));
  EXPECT_EQ(state()["evaluator"]["best_version"], 2);
  evaluator = std::make_unique<metrics::Exposer>(registry, "127.0.0.1:" + std::to_string(evaluator_port));
  evaluator->handle("/matches", evaluator_handler);
  EXPECT_TRUE(wait_until([&] { return state()["sources"]["evaluator"]["ok"] == true; },
                         std::chrono::seconds(5)));

  // The page (with its security policy) and every file it embeds, with their types.
  const std::string page = testing::http_get(port, "/");
  EXPECT_NE(page.find("200 OK"), std::string::npos);
  EXPECT_NE(page.find("Content-Security-Policy: default-src 'self'"), std::string::npos);
  for (const Asset& asset : assets()) {
    const std::string response = testing::http_get(port, "/" + std::string(asset.path));
    EXPECT_NE(response.find("200 OK"), std::string::npos) << asset.path;
    EXPECT_NE(response.find("Content-Type: " + std::string(asset.content_type)), std::string::npos)
        << asset.path;
    EXPECT_EQ(body_of(response), asset.body) << asset.path;
  }
  EXPECT_NE(testing::http_get(port, "/vendor/cm-chessboard/assets/pieces/staunty.svg").find("404"),
            std::string::npos);
  EXPECT_NE(testing::http_get(port, "/../etc/passwd").find("HTTP/1.1 4"), std::string::npos);
  // Read-only.
  for (const char* method : {"POST", "PUT", "DELETE"})
    EXPECT_NE(raw_request(port, std::string(method) + " /api/state HTTP/1.0\r\n\r\n").find("405"),
              std::string::npos)
        << method;
  // Its own metrics on the same port.
  EXPECT_NE(testing::http_get(port, "/metrics").find("chessrl_web_polls_total"), std::string::npos);

  web.signal(SIGTERM);
  EXPECT_EQ(web.wait(std::chrono::seconds(10)), 0) << web.err();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace chessrl::web_service
