// The game viewer's parts (unit): self-play's /live JSON (LiveView), the
// evaluator's /matches (MatchesView over a state directory), chessrl-web's
// options, its checks of what the sources send (clean_live, clean_matches),
// the snapshot it serves (ViewerState), its HTTP client against a real
// server, and Exposer::handle().
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/metrics/exposer.h"
#include "chessrl/metrics/http_client.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/nn/backend.h"
#include "chessrl/nn/batch_evaluator.h"
#include "child_process.h"
#include "live_view.h"
#include "matches_view.h"
#include "resolve.h"
#include "viewer_state.h"
#include "web_options.h"

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace chessrl::web_service {
namespace {

Json live_body(const std::string& pod, int plies) {
  Json moves = Json::array();
  const char* cycle[] = {"g1f3", "g8f6", "f3g1", "f6g8"};
  for (int i = 0; i < plies; ++i) moves.push_back(cycle[i % 4]);
  return {{"pod", pod},
          {"model_version", 7},
          {"games_finished", 12},
          {"updated_ms", 1},
          {"game",
           {{"id", "g"},
            {"start_fen", chess::Position().fen()},
            {"moves", moves},
            {"in_progress", true},
            {"result", "*"},
            {"termination", ""},
            {"max_plies", 60}}},
          {"previous", nullptr}};
}

TEST(WebOptions, EndpointsAreParsedAndBadOnesNamed) {
  EXPECT_EQ(parse_endpoint("--selfplay", "pods.ns.svc:9101").value().host, "pods.ns.svc");
  EXPECT_EQ(parse_endpoint("--selfplay", "[::1]:80").value().host, "::1");
  for (const char* bad : {"host", "host:0", "host:70000", "host:x", ":80", "a b:80", "::1:80"}) {
    auto r = parse_endpoint("--evaluator", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find("--evaluator '" + std::string(bad) + "'"), std::string::npos)
        << r.error();
  }
  WebOptions o;
  o.selfplay = " a:1, b:2 ,,";
  o.evaluator = "c:3";
  ASSERT_TRUE(o.validate().ok());
  ASSERT_EQ(o.selfplay_endpoints.size(), 2u);
  EXPECT_EQ(o.selfplay_endpoints[1].text(), "b:2");
  ASSERT_EQ(o.evaluator_endpoint.size(), 1u);
  o.selfplay = "a:1,b";
  EXPECT_NE(o.validate().error().find("--selfplay 'b'"), std::string::npos);
}

TEST(CleanLive, RefusesWhatIsNotALiveAnswerAndKeepsOnlyKnownFields) {
  EXPECT_FALSE(clean_live("not json").ok());
  EXPECT_FALSE(clean_live("[1,2]").ok());
  EXPECT_NE(clean_live(R"({"model_version":1})").error().find("no pod"), std::string::npos);
  Json body = live_body("p", 3);
  body["secret"] = "x";
  body["game"]["extra"] = "y";
  const Json clean = Json::parse(clean_live(body.dump()).value());
  EXPECT_FALSE(clean.contains("secret"));
  EXPECT_FALSE(clean["game"].contains("extra"));
  EXPECT_EQ(clean["game"]["moves"].size(), 3u);
  EXPECT_EQ(clean["model_version"], 7);
  // A move that is not UCI costs the game, not the board.
  body["game"]["moves"][1] = "<script>";
  EXPECT_TRUE(Json::parse(clean_live(body.dump()).value())["game"].is_null());
  // Bounded: at most 2048 plies, a pod name of at most 253 characters.
  body = live_body(std::string(1000, 'p'), 3000);
  const Json capped = Json::parse(clean_live(body.dump()).value());
  EXPECT_EQ(capped["game"]["moves"].size(), 2048u);
  EXPECT_EQ(capped["pod"].get<std::string>().size(), 253u);
}

TEST(CleanMatches, KeepsScalarsBoundsCountsAndDropsHugePgn) {
  EXPECT_FALSE(clean_matches("42").ok());
  Json matches = Json::array();
  for (int i = 0; i < 150; ++i)
    matches.push_back({{"candidate", i}, {"opponent", "random"}, {"elo", 1.5}, {"nested", {1, 2}}});
  const Json body = {{"best_version", 3},
                     {"matches", matches},
                     {"gating", {{"candidate", 4}, {"opponent_version", 3}, {"pgn", "1. e4 *"}}},
                     {"gauntlet", {{"candidate", 4}, {"pgn", std::string((1 << 20) + 1, 'x')}}}};
  const Json clean = Json::parse(clean_matches(body.dump()).value());
  EXPECT_EQ(clean["best_version"], 3);
  EXPECT_EQ(clean["matches"].size(), 100u);
  EXPECT_FALSE(clean["matches"][0].contains("nested"));
  EXPECT_EQ(clean["matches"][0]["opponent"], "random");
  EXPECT_EQ(clean["gating"]["pgn"], "1. e4 *");
  EXPECT_TRUE(clean["gauntlet"].is_null());
}

TEST(ViewerState, BoardsSortedByPodStaleThenDroppedAndAtMostMax) {
  ViewerState state({.selfplay_configured = true,
                     .evaluator_configured = true,
                     .max_boards = 2,
                     .stale_after_ms = 5000,
                     .poll_interval_ms = 1000});
  EXPECT_EQ(Json::parse(*state.snapshot())["boards"].size(), 0u);
  PollRound round;
  round.now_ms = 1000;
  round.selfplay.emplace_back("10.0.0.2:9101", live_body("pod-b", 4).dump());
  round.selfplay.emplace_back("10.0.0.1:9101", live_body("pod-a", 2).dump());
  round.selfplay.emplace_back("10.0.0.3:9101", Result<std::string>(fail("connect: refused")));
  round.evaluator = Result<std::string>(R"({"best_version":2,"matches":[]})");
  state.apply(round);
  Json s = Json::parse(*state.snapshot());
  ASSERT_EQ(s["boards"].size(), 2u);
  EXPECT_EQ(s["boards"][0]["pod"], "pod-a");
  EXPECT_EQ(s["boards"][1]["pod"], "pod-b");
  EXPECT_FALSE(s["boards"][0]["stale"].get<bool>());
  EXPECT_EQ(s["sources"]["selfplay"]["pods"], 2);
  EXPECT_EQ(s["sources"]["selfplay"]["unreachable"], 1);
  EXPECT_EQ(s["sources"]["selfplay"]["error"], "connect: refused");
  EXPECT_TRUE(s["sources"]["evaluator"]["ok"].get<bool>());
  EXPECT_EQ(s["evaluator"]["best_version"], 2);

  // pod-a stops answering: shown stale; the evaluator fails: its last answer stays.
  round.now_ms = 3000;
  round.selfplay = {};
  round.selfplay.emplace_back("10.0.0.2:9101", live_body("pod-b", 5).dump());
  round.selfplay.emplace_back("10.0.0.1:9101", Result<std::string>("{\"pod\":"));
  round.evaluator = Result<std::string>(fail("http://e:9104/matches: HTTP 503"));
  state.apply(round);
  s = Json::parse(*state.snapshot());
  ASSERT_EQ(s["boards"].size(), 2u);
  EXPECT_TRUE(s["boards"][0]["stale"].get<bool>());
  EXPECT_EQ(s["boards"][0]["game"]["moves"].size(), 2u);  // its last answer
  EXPECT_EQ(s["boards"][1]["game"]["moves"].size(), 5u);
  EXPECT_NE(s["sources"]["selfplay"]["error"].get<std::string>().find("10.0.0.1:9101: /live"),
            std::string::npos);
  EXPECT_FALSE(s["sources"]["evaluator"]["ok"].get<bool>());
  EXPECT_EQ(s["sources"]["evaluator"]["last_ok_ms"], 1000);
  EXPECT_EQ(s["evaluator"]["best_version"], 2);

  // Past stale_after: dropped.
  round.now_ms = 7000;
  round.selfplay.pop_back();
  round.evaluator.reset();
  state.apply(round);
  s = Json::parse(*state.snapshot());
  ASSERT_EQ(s["boards"].size(), 1u);
  EXPECT_EQ(s["boards"][0]["pod"], "pod-b");
}

TEST(HttpClient, GetsBodiesAndNamesFailures) {
  metrics::Registry registry;
  metrics::Exposer server(registry, "127.0.0.1:0");
  server.handle("/big", [](const std::string&) {
    return metrics::HttpResponse{200, "text/plain", std::string(5000, 'x')};
  });
  server.handle("/live", [](const std::string& path) {
    return metrics::HttpResponse{200, "application/json", "{\"path\":\"" + path + "\"}"};
  });
  const auto timeout = std::chrono::milliseconds(2000);
  const auto reply = metrics::http_get("127.0.0.1", server.port(), "/live", timeout, 1000);
  ASSERT_TRUE(reply.ok()) << reply.error();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "{\"path\":\"/live\"}");
  EXPECT_NE(metrics::http_get("127.0.0.1", server.port(), "/big", timeout, 1000).error().find("more than 1000"),
            std::string::npos);
  EXPECT_EQ(metrics::http_get("127.0.0.1", server.port(), "/none", timeout, 1000)->status, 404);
  auto refused = metrics::http_get("127.0.0.1", 1, "/live", timeout, 1000);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("127.0.0.1:1/live"), std::string::npos) << refused.error();
  const auto local = resolve_all("localhost");
  ASSERT_TRUE(local.ok());
  EXPECT_FALSE(local.value().empty());
  EXPECT_EQ(resolve_all("10.1.2.3").value(), std::vector<std::string>{"10.1.2.3"});
  EXPECT_FALSE(resolve_all("no-such-host.invalid").ok());
}

TEST(ExposerHandle, ReadOnlyPathsAndHandlersUnderAPrefix) {
  metrics::Registry registry;
  metrics::Exposer server(registry, "127.0.0.1:0");
  server.handle("/", [](const std::string& path) {
    return metrics::HttpResponse{path == "/static/a.js" ? 200 : 404, "text/plain", path};
  });
  const std::string page = testing::http_get(server.port(), "/static/a.js");
  EXPECT_NE(page.find("200 OK"), std::string::npos) << page;
  EXPECT_NE(page.find("X-Content-Type-Options: nosniff"), std::string::npos);
  EXPECT_NE(testing::http_get(server.port(), "/other").find("404"), std::string::npos);
  // /metrics keeps its own handler.
  EXPECT_NE(testing::http_get(server.port(), "/metrics").find("200 OK"), std::string::npos);
}

}  // namespace
}  // namespace chessrl::web_service

namespace chessrl::selfplay_service {
namespace {

TEST(LiveView, ServesTheRunnersGamesAndKeepsThemWhenItGoes) {
  LiveView view("pod-x");
  Json j = Json::parse(view.json(0));
  EXPECT_EQ(j["pod"], "pod-x");
  EXPECT_TRUE(j["game"].is_null());
  {
    selfplay::GameRunnerOptions options;
    options.concurrent_games = 1;
    options.threads = 1;
    options.max_games = 2;
    options.config.playouts = {.full_visits = 8, .reduced_visits = 4, .full_fraction = 0.5f};
    nn::BatchEvaluator evaluator(std::make_shared<nn::FakeBackend>(), {.max_batch = 16});
    selfplay::GameRunner runner(evaluator, options);
    view.attach(runner, 5);
    runner.run([](record::GameRecord&&) {});
    j = Json::parse(view.json(2));
    EXPECT_EQ(j["model_version"], 5);
    EXPECT_EQ(j["games_finished"], 2);
    EXPECT_FALSE(j["game"]["in_progress"].get<bool>());
    EXPECT_FALSE(j["game"]["moves"].empty());
    EXPECT_FALSE(j["previous"].is_null());
    view.detach();
  }
  // The runner is gone: its games are still shown.
  const Json kept = Json::parse(view.json(2));
  EXPECT_EQ(kept["game"], j["game"]);
}

TEST(LiveView, AGameIsItsMovesInUciWithItsResult) {
  selfplay::WatchedGame game;
  game.id = "id-1";
  game.start_fen = chess::Position().fen();
  game.moves = {chess::parse_uci(chess::Position(), "e2e4").value()};
  game.result = {chess::Outcome::kWhiteWins, chess::Termination::kCheckmate};
  game.max_plies = 60;
  const Json g = Json::parse(watched_game_json(game));
  EXPECT_EQ(g["moves"], Json::array({"e2e4"}));
  EXPECT_FALSE(g["in_progress"].get<bool>());
  EXPECT_EQ(g["result"], "1-0");
  EXPECT_EQ(g["termination"], "checkmate");
}

TEST(MatchesView, NewestFirstWithoutPathsAndThePgnOfTheNewestMatches) {
  const fs::path dir = fs::temp_directory_path() / ("matches-view-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "pgn");
  evaluator_service::MatchesView view(dir.string());
  Json j = Json::parse(view.json());
  EXPECT_EQ(j["matches"].size(), 0u);
  EXPECT_TRUE(j["gating"].is_null());
  std::ofstream(dir / "pgn" / "match-v2-v1.pgn") << "[Event \"gating\"]\n\n1. e4 *\n";
  std::ofstream(dir / "pgn" / "gauntlet-v2.pgn") << "[Event \"gauntlet\"]\n\n1. d4 *\n";
  {
    std::ofstream results(dir / "results.jsonl");
    results << R"({"candidate":2,"opponent":"best","opponent_version":1,"promoted":true,"pgn":"/elsewhere/pgn/match-v2-v1.pgn"})"
            << "\n"
            << R"({"candidate":2,"opponent":"random","elo":120.5,"lower":50,"upper":190,"pgn":"/elsewhere/pgn/gauntlet-v2.pgn"})"
            << "\nnot json\n";
  }
  j = Json::parse(view.json());
  ASSERT_EQ(j["matches"].size(), 2u);
  EXPECT_EQ(j["matches"][0]["opponent"], "random");  // newest first
  EXPECT_FALSE(j["matches"][0].contains("pgn"));
  EXPECT_EQ(j["best_version"], 2);  // promoted
  EXPECT_EQ(j["gating"]["pgn"], "[Event \"gating\"]\n\n1. e4 *\n");
  EXPECT_EQ(j["gating"]["opponent_version"], 1);
  EXPECT_EQ(j["gauntlet"]["pgn"], "[Event \"gauntlet\"]\n\n1. d4 *\n");
  // A line appended: read again.
  std::ofstream(dir / "results.jsonl", std::ios::app)
      << R"({"candidate":3,"opponent":"best","opponent_version":2,"promoted":false})" << "\n";
  j = Json::parse(view.json());
  EXPECT_EQ(j["matches"].size(), 3u);
  EXPECT_EQ(j["best_version"], 2);
  EXPECT_EQ(j["gating"]["candidate"], 2);  // the newest gating match with a PGN
  fs::remove_all(dir);
}

}  // namespace
}  // namespace chessrl::selfplay_service
