// The evaluator's pieces without a registry: options and their checks, the
// state directory (progress, results.jsonl), the log line, registry health
// over time, the metrics a match produces, and the Stockfish ladder's climb
// (its engine stood in by sh, which is never started here).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "chessrl/config/config.h"
#include "chessrl/eval/elo.h"
#include "chessrl/eval/match.h"
#include "chessrl/metrics/registry.h"
#include "evaluator_ladder.h"
#include "evaluator_metrics.h"
#include "evaluator_options.h"
#include "evaluator_state.h"
#include "registry_health.h"

namespace chessrl::evaluator_service {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace std::chrono_literals;

std::string temp_dir() {
  char pattern[] = "/tmp/chessrl-evaluator-unit-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  EXPECT_NE(made, nullptr);
  return made;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Parses `args` into fresh options; the CLI11 error's message when it fails.
std::string parse(std::vector<std::string> args, EvaluatorOptions& options) {
  CLI::App app{"test"};
  add_options(app, options);
  config::finish(app);
  std::vector<const char*> argv = {"chessrl-evaluator"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(EvaluatorOptionsTest, DefaultsMatchTheDocumentedOnes) {
  EvaluatorOptions o;
  ASSERT_EQ(parse({}, o), "");
  EXPECT_EQ(o.registry, "127.0.0.1:50051");
  EXPECT_EQ(o.metrics_listen, "0.0.0.0:9104");
  EXPECT_EQ(o.visits, 32);
  EXPECT_EQ(o.threads, 2);
  EXPECT_EQ(o.max_plies, 300);
  EXPECT_EQ(o.random_plies, 2);
  EXPECT_EQ(o.pairs, 4);
  EXPECT_EQ(o.anchor_pairs, 4);
  EXPECT_EQ(o.gauntlet_every, 1);
  EXPECT_EQ(o.lease_s, 120);
  EXPECT_DOUBLE_EQ(o.promote_score, 0.5);
  EXPECT_EQ(o.state_dir, "evaluator");
  EXPECT_TRUE(o.save_models);
  EXPECT_FALSE(o.once);
  EXPECT_EQ(o.ladder, "");  // no ladder unless asked (chessrl local asks)
  EXPECT_EQ(o.anchor_specs(), (std::vector<std::string>{"random", "greedy"}));
  EXPECT_TRUE(o.validate().ok());
}

TEST(EvaluatorOptionsTest, FlagsFillEveryFieldAndEnginesRepeat) {
  EvaluatorOptions o;
  ASSERT_EQ(parse({"--registry",
                   "replay:1234",
                   "--pairs",
                   "3",
                   "--anchor-pairs",
                   "2",
                   "--visits",
                   "16",
                   "--leaves",
                   "4",
                   "--promote-score",
                   "0.55",
                   "--anchors",
                   "greedy",
                   "--engine",
                   "uci:stockfish;Skill Level=0;movetime=50",
                   "--engine",
                   "uci:stockfish;nodes=100;name=sf-n100",
                   "--save-models",
                   "false",
                   "--once",
                   "--unhealthy-after",
                   "5",
                   "--state-dir",
                   "/tmp/x"},
                  o),
            "");
  EXPECT_EQ(o.registry, "replay:1234");
  EXPECT_EQ(o.pairs, 3);
  EXPECT_EQ(o.anchor_pairs, 2);
  EXPECT_EQ(o.visits, 16);
  EXPECT_EQ(o.leaves, 4);
  EXPECT_DOUBLE_EQ(o.promote_score, 0.55);
  EXPECT_FALSE(o.save_models);
  EXPECT_TRUE(o.once);
  EXPECT_EQ(o.unhealthy_after_s, 5);
  EXPECT_EQ(o.anchor_specs(),
            (std::vector<std::string>{"greedy", "uci:stockfish;Skill Level=0;movetime=50",
                                      "uci:stockfish;nodes=100;name=sf-n100"}));
  EXPECT_TRUE(o.validate().ok()) << o.validate().error();
}

TEST(EvaluatorOptionsTest, OutOfRangeAndUnknownOptionsAreNamed) {
  EvaluatorOptions a;
  EXPECT_NE(parse({"--pairs", "0"}, a).find("--pairs"), std::string::npos);
  EvaluatorOptions b;
  EXPECT_NE(parse({"--promote-score", "1.5"}, b).find("--promote-score"), std::string::npos);
  EvaluatorOptions c;
  EXPECT_NE(parse({"--no-such-option"}, c).find("--no-such-option"), std::string::npos);
  EvaluatorOptions d;
  EXPECT_NE(parse({"--lease", "7200"}, d).find("--lease"), std::string::npos);
  EvaluatorOptions e;
  e.lease_s = -1;
  ASSERT_FALSE(e.validate().ok());
  EXPECT_NE(e.validate().error().find("--lease -1"), std::string::npos) << e.validate().error();
  EvaluatorOptions f;
  ASSERT_EQ(parse({"--lease", "0"}, f), "");
  EXPECT_EQ(f.lease_s, 0);
}

TEST(EvaluatorOptionsTest, AnchorListsSplitTrimAndDropDuplicates) {
  EvaluatorOptions o;
  o.anchors = " random , greedy,,random ";
  o.engines = {"uci:stockfish;depth=1", "uci:stockfish;depth=1"};
  EXPECT_EQ(o.anchor_specs(),
            (std::vector<std::string>{"random", "greedy", "uci:stockfish;depth=1"}));
  o.anchors = "";
  o.engines.clear();
  EXPECT_TRUE(o.anchor_specs().empty());
  EXPECT_TRUE(o.validate().ok());
}

TEST(EvaluatorOptionsTest, BadAnchorsAndSettingsFailNamingThem) {
  auto error_of = [](EvaluatorOptions o) {
    auto valid = o.validate();
    return valid.ok() ? std::string() : valid.error();
  };
  EvaluatorOptions o;
  o.engines = {"stockfish"};
  EXPECT_NE(error_of(o).find("--engine stockfish"), std::string::npos) << error_of(o);
  o.engines = {"uci:stockfish;movetime=soon"};
  EXPECT_NE(error_of(o).find("uci:stockfish;movetime=soon"), std::string::npos) << error_of(o);
  o = EvaluatorOptions();
  o.anchors = "random,bogus";
  EXPECT_NE(error_of(o).find("bogus"), std::string::npos) << error_of(o);
  o = EvaluatorOptions();
  o.engines = {"uci:stockfish;depth=1;name=random"};
  EXPECT_NE(error_of(o).find("label 'random'"), std::string::npos) << error_of(o);
  o = EvaluatorOptions();
  o.leaves = 65;
  EXPECT_NE(error_of(o).find("--leaves"), std::string::npos) << error_of(o);
  o = EvaluatorOptions();
  o.device = "tpu";
  EXPECT_NE(error_of(o).find("--device tpu"), std::string::npos) << error_of(o);
}

TEST(EvaluatorOptionsTest, TheLadderParsesAndABadOneIsNamed) {
  auto error_of = [](EvaluatorOptions o) {
    auto valid = o.validate();
    return valid.ok() ? std::string() : valid.error();
  };
  EvaluatorOptions o;
  ASSERT_EQ(parse({"--ladder", "stockfish:0:1,stockfish:1:2"}, o), "");
  EXPECT_EQ(o.ladder, "stockfish:0:1,stockfish:1:2");
  EXPECT_EQ(error_of(o), "");
  o.ladder = "off";
  EXPECT_EQ(error_of(o), "");
  o.ladder = "stockfish:0";
  EXPECT_NE(error_of(o).find("--ladder: ladder 'stockfish:0', rung 1"), std::string::npos)
      << error_of(o);
  o.ladder = "stockfish:0:99";
  EXPECT_NE(error_of(o).find("DEPTH '99'"), std::string::npos) << error_of(o);
  // A rung's label may not be an anchor's too.
  o.ladder = "stockfish:0:1";
  o.engines = {"uci:stockfish;depth=1;name=stockfish-skill0"};
  EXPECT_NE(error_of(o).find("the rung label 'stockfish-skill0' is taken"), std::string::npos)
      << error_of(o);
}

eval::MatchScore score_of(int wins, int draws, int losses) {
  eval::MatchScore s;
  s.wins = wins;
  s.draws = draws;
  s.losses = losses;
  return s;
}

TEST(EvaluatorStateTest, ProgressRoundTripsAndStartsAtZero) {
  const std::string dir = temp_dir() + "/state";
  auto state = StateDir::open(dir);
  ASSERT_TRUE(state.ok()) << state.error();
  EXPECT_TRUE(fs::is_directory(dir + "/pgn"));
  EXPECT_TRUE(fs::is_directory(dir + "/models"));
  auto empty = state->load_progress();
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->last_evaluated, 0u);
  EXPECT_EQ(empty->last_gated, 0u);
  EXPECT_EQ(empty->ladder_rung, "");
  ASSERT_TRUE(
      state->save_progress({.last_evaluated = 7, .last_gated = 8, .ladder_rung = "sf-skill1"}).ok());
  auto again = StateDir::open(dir)->load_progress();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->last_evaluated, 7u);
  EXPECT_EQ(again->last_gated, 8u);
  EXPECT_EQ(again->ladder_rung, "sf-skill1");
  EXPECT_EQ(state->match_pgn_path(7, 5), dir + "/pgn/match-v7-v5.pgn");
  EXPECT_EQ(state->gauntlet_pgn_path(7), dir + "/pgn/gauntlet-v7.pgn");
  EXPECT_EQ(state->model_path(7), dir + "/models/model-v7.chrl");
  fs::remove_all(fs::path(dir).parent_path());
}

TEST(EvaluatorStateTest, ACorruptStateFileIsAnErrorNamingIt) {
  const std::string dir = temp_dir();
  auto state = StateDir::open(dir);
  ASSERT_TRUE(state.ok());
  std::ofstream(dir + "/state.json") << "{not json";
  auto progress = state->load_progress();
  ASSERT_FALSE(progress.ok());
  EXPECT_NE(progress.error().find(dir + "/state.json"), std::string::npos) << progress.error();
  std::ofstream(dir + "/state.json") << R"({"last_evaluated": -3})";
  progress = state->load_progress();
  ASSERT_FALSE(progress.ok());
  EXPECT_NE(progress.error().find("last_evaluated"), std::string::npos) << progress.error();
  std::ofstream(dir + "/state.json") << R"({"last_evaluated": 3, "ladder_rung": 2})";
  progress = state->load_progress();
  ASSERT_FALSE(progress.ok());
  EXPECT_NE(progress.error().find("'ladder_rung' is not a rung's label"), std::string::npos)
      << progress.error();
  fs::remove_all(dir);
}

TEST(EvaluatorStateTest, StateDirThatCannotBeMadeIsNamed) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/file") << "x";
  auto state = StateDir::open(dir + "/file/sub");
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.error().find(dir + "/file/sub"), std::string::npos) << state.error();
  fs::remove_all(dir);
}

TEST(EvaluatorStateTest, ResultsAreOneJsonLinePerMatch) {
  const std::string dir = temp_dir();
  auto state = StateDir::open(dir);
  ASSERT_TRUE(state.ok());
  MatchRecord r;
  r.time_ms = 1714564800123;  // 2024-05-01T12:00:00.123Z
  r.candidate = 7;
  r.opponent = "best";
  r.opponent_version = 5;
  r.score = score_of(5, 8, 3);
  r.elo = eval::estimate_elo(r.score);
  r.promoted = true;
  r.pgn = "x.pgn";
  ASSERT_TRUE(state->append_result(r).ok());
  r.opponent = "random";
  r.opponent_version = 0;
  r.promoted = false;
  ASSERT_TRUE(state->append_result(r).ok());
  std::istringstream lines(slurp(state->results_path()));
  std::vector<Json> parsed;
  for (std::string line; std::getline(lines, line);) parsed.push_back(Json::parse(line));
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0]["time"], "2024-05-01T12:00:00.123Z");
  EXPECT_EQ(parsed[0]["candidate"], 7);
  EXPECT_EQ(parsed[0]["opponent"], "best");
  EXPECT_EQ(parsed[0]["opponent_version"], 5);
  EXPECT_EQ(parsed[0]["wins"], 5);
  EXPECT_EQ(parsed[0]["draws"], 8);
  EXPECT_EQ(parsed[0]["losses"], 3);
  EXPECT_EQ(parsed[0]["games"], 16);
  EXPECT_NEAR(parsed[0]["score"].get<double>(), 9.0 / 16, 1e-12);
  EXPECT_NEAR(parsed[0]["elo"].get<double>(), r.elo.elo, 1e-9);
  EXPECT_LT(parsed[0]["lower"].get<double>(), parsed[0]["elo"].get<double>());
  EXPECT_GT(parsed[0]["upper"].get<double>(), parsed[0]["elo"].get<double>());
  EXPECT_EQ(parsed[0]["promoted"], true);
  EXPECT_EQ(parsed[1]["opponent"], "random");
  EXPECT_FALSE(parsed[1].contains("opponent_version"));
  EXPECT_EQ(parsed[1]["promoted"], false);
  fs::remove_all(dir);
}

TEST(EvaluatorStateTest, TheLogLineShowsCountsScoreAndInterval) {
  MatchRecord r;
  r.candidate = 7;
  r.opponent = "best";
  r.opponent_version = 5;
  r.score = score_of(5, 8, 3);
  r.elo = eval::estimate_elo(r.score);
  char expected[200];
  std::snprintf(expected, sizeof expected,
                "v7 vs best v5: +5 =8 -3 score %.3f elo %+.1f [%+.1f, %+.1f] (16 games)",
                r.score.score(), r.elo.elo, r.elo.lower, r.elo.upper);
  EXPECT_EQ(describe(r), expected);
  r.opponent = "sf-skill0";
  r.opponent_version = 0;
  r.forfeits = 2;
  EXPECT_EQ(describe(r).rfind("v7 vs sf-skill0: +5 =8 -3", 0), 0u) << describe(r);
  EXPECT_NE(describe(r).find("(16 games, 2 forfeited)"), std::string::npos) << describe(r);
}

TEST(EvaluatorStateTest, TheSummaryLineIsJsonWithTheLadderRungWhenThereIsOne) {
  EvaluationReport report;
  report.candidate = 3;
  report.evaluated = true;
  report.best_before = 2;
  report.best_after = 3;
  report.promoted = true;
  MatchRecord r;
  r.candidate = 3;
  r.opponent = "best";
  r.score = score_of(2, 0, 0);
  report.matches.push_back(r);
  report.skipped.push_back("ghost: engine did not start");
  const Json j = Json::parse(to_json_line(report));
  EXPECT_EQ(j["candidate"], 3);
  EXPECT_EQ(j["best_before"], 2);
  EXPECT_EQ(j["best"], 3);
  EXPECT_EQ(j["promoted"], true);
  ASSERT_EQ(j["matches"].size(), 1u);
  EXPECT_EQ(j["matches"][0]["wins"], 2);
  EXPECT_EQ(j["skipped"][0], "ghost: engine did not start");
  EXPECT_FALSE(j.contains("ladder_rung"));
  report.ladder_rung = "stockfish-skill1";
  EXPECT_EQ(Json::parse(to_json_line(report))["ladder_rung"], "stockfish-skill1");
}

TEST(RegistryHealthTest, UnhealthyOnlyAfterFailuresOutlastTheThreshold) {
  RegistryHealth health("replay:50051", 60s);
  const auto t0 = RegistryHealth::Clock::now();
  EXPECT_EQ(health.reason(t0), "");
  EXPECT_TRUE(health.failed("LatestModel: UNAVAILABLE: refused", t0));
  EXPECT_FALSE(health.failed("LatestModel: UNAVAILABLE: still refused", t0 + 30s));
  EXPECT_EQ(health.reason(t0 + 59s), "");
  EXPECT_EQ(health.reason(t0 + 60s), "");
  const std::string reason = health.reason(t0 + 61s);
  EXPECT_NE(reason.find("replay:50051 unreachable for 61 s"), std::string::npos) << reason;
  EXPECT_NE(reason.find("still refused"), std::string::npos) << reason;
  EXPECT_TRUE(health.succeeded(t0 + 62s));
  EXPECT_FALSE(health.succeeded(t0 + 63s));
  EXPECT_EQ(health.reason(t0 + 200s), "");
  // A new outage counts from its own start.
  EXPECT_TRUE(health.failed("again", t0 + 300s));
  EXPECT_EQ(health.reason(t0 + 330s), "");
  EXPECT_NE(health.reason(t0 + 361s), "");
}

std::string series(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + " ", 0) == 0) return line.substr(name.size() + 1);
  }
  return "<missing " + name + ">";
}

TEST(EvaluatorMetricsTest, AMatchSetsEloScoreGamesAndForfeitsBySide) {
  metrics::Registry registry;
  EvaluatorMetrics m(registry);
  eval::MatchResult result;
  result.score = score_of(3, 1, 2);
  eval::MatchGame forfeit_by_opponent;
  forfeit_by_opponent.first_score = 1;
  forfeit_by_opponent.forfeit = "engine sf did not answer";
  eval::MatchGame forfeit_by_candidate;
  forfeit_by_candidate.first_score = 0;
  forfeit_by_candidate.forfeit = "illegal move";
  eval::MatchGame normal;
  result.games = {forfeit_by_opponent, forfeit_by_opponent, forfeit_by_candidate, normal};
  result.forfeits = 3;
  m.on_match("sf", result, 2.5);
  m.on_evaluated(7);
  m.on_best(7, true);
  const std::string text = registry.serialize();
  const auto elo = result.elo();
  EXPECT_NEAR(std::stod(series(text, "chessrl_eval_elo{opponent=\"sf\"}")), elo.elo, 1e-3);
  EXPECT_NEAR(std::stod(series(text, "chessrl_eval_elo_lower{opponent=\"sf\"}")), elo.lower, 1e-3);
  EXPECT_NEAR(std::stod(series(text, "chessrl_eval_elo_upper{opponent=\"sf\"}")), elo.upper, 1e-3);
  EXPECT_NEAR(std::stod(series(text, "chessrl_eval_score{opponent=\"sf\"}")), 3.5 / 6, 1e-6);
  EXPECT_EQ(series(text, "chessrl_eval_games_total{opponent=\"sf\",result=\"win\"}"), "3");
  EXPECT_EQ(series(text, "chessrl_eval_games_total{opponent=\"sf\",result=\"draw\"}"), "1");
  EXPECT_EQ(series(text, "chessrl_eval_games_total{opponent=\"sf\",result=\"loss\"}"), "2");
  EXPECT_EQ(series(text, "chessrl_eval_forfeits_total{opponent=\"sf\",side=\"opponent\"}"), "2");
  EXPECT_EQ(series(text, "chessrl_eval_forfeits_total{opponent=\"sf\",side=\"candidate\"}"), "1");
  EXPECT_EQ(series(text, "chessrl_eval_matches_total"), "1");
  EXPECT_EQ(series(text, "chessrl_eval_match_seconds_total"), "2.5");
  EXPECT_EQ(series(text, "chessrl_model_version"), "7");
  EXPECT_EQ(series(text, "chessrl_eval_best_version"), "7");
  EXPECT_EQ(series(text, "chessrl_eval_promotions_total"), "1");
  // A second match adds to the counters and replaces the gauges.
  result.score = score_of(0, 0, 2);
  result.games.clear();
  m.on_match("sf", result, 1);
  const std::string later = registry.serialize();
  EXPECT_EQ(series(later, "chessrl_eval_games_total{opponent=\"sf\",result=\"loss\"}"), "4");
  EXPECT_EQ(series(later, "chessrl_eval_score{opponent=\"sf\"}"), "0");
  EXPECT_LT(std::stod(series(later, "chessrl_eval_elo{opponent=\"sf\"}")), 0);
}

// The ladder's rungs over a program that exists (sh) or not; no game is played.
struct LadderFixture {
  metrics::Registry registry;
  EvaluatorMetrics metrics{registry};
  std::vector<std::string> lines;
  EvaluatorLadder make(const std::string& ladder, const std::string& saved = "") {
    return EvaluatorLadder(ladder, saved, metrics,
                           [this](const std::string& line) { lines.push_back(line); });
  }
  std::string log() const {
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
  }
  std::string text() const { return registry.serialize(); }
};

TEST(EvaluatorLadderTest, AScoreOfHalfOrMoreMovesUpOneRungAndTheTopStays) {
  LadderFixture f;
  EvaluatorLadder ladder = f.make("sh:0:1,sh:1:2,sh:3:4");
  ASSERT_TRUE(ladder.active()) << f.log();
  EXPECT_EQ(ladder.rung(), 0u);
  EXPECT_EQ(ladder.in_play().label, "sh-skill0");
  EXPECT_EQ(ladder.in_play().program.front(), '/') << "the program found on PATH";
  EXPECT_NE(f.log().find("the ladder: sh-skill0, sh-skill1, sh-skill3; in play: sh-skill0 (rung "
                         "1 of 3)"),
            std::string::npos)
      << f.log();
  EXPECT_EQ(series(f.text(), "chessrl_eval_ladder_rung"), "1");
  EXPECT_EQ(series(f.text(), "chessrl_eval_ladder_in_play{opponent=\"sh-skill0\"}"), "1");
  EXPECT_EQ(series(f.text(), "chessrl_eval_ladder_in_play{opponent=\"sh-skill1\"}"), "0");

  EXPECT_FALSE(ladder.record(4, 0.0));
  EXPECT_FALSE(ladder.record(5, 0.4375));  // 3.5 of 8: below half
  EXPECT_EQ(ladder.rung(), 0u);
  EXPECT_TRUE(ladder.record(6, 0.5));  // 4 of 8: half the time
  EXPECT_EQ(ladder.in_play().label, "sh-skill1");
  EXPECT_EQ(ladder.saved_label(), "sh-skill1");
  EXPECT_NE(f.log().find("v6 scored 0.500 against sh-skill0: the ladder moves up to sh-skill1 "
                         "(rung 2 of 3)"),
            std::string::npos)
      << f.log();
  EXPECT_EQ(series(f.text(), "chessrl_eval_ladder_rung"), "2");
  EXPECT_EQ(series(f.text(), "chessrl_eval_ladder_in_play{opponent=\"sh-skill0\"}"), "0");
  EXPECT_EQ(series(f.text(), "chessrl_eval_ladder_in_play{opponent=\"sh-skill1\"}"), "1");
  EXPECT_TRUE(ladder.record(7, 1.0));  // one rung at a time
  EXPECT_EQ(ladder.in_play().label, "sh-skill3");
  EXPECT_FALSE(ladder.record(8, 0.9));  // the top stays
  EXPECT_EQ(ladder.rung(), 2u);
  EXPECT_NE(f.log().find("v8 scored 0.900 against sh-skill3, the ladder's top rung"),
            std::string::npos)
      << f.log();
}

TEST(EvaluatorLadderTest, ARestartResumesAtTheSavedRungThroughStateJson) {
  const std::string dir = temp_dir();
  auto state = StateDir::open(dir);
  ASSERT_TRUE(state.ok());
  {
    LadderFixture f;
    EvaluatorLadder ladder = f.make("sh:0:1,sh:1:2");
    ASSERT_TRUE(ladder.record(3, 0.75));
    ASSERT_TRUE(state->save_progress({.last_evaluated = 3, .last_gated = 3,
                                      .ladder_rung = ladder.saved_label()})
                    .ok());
  }
  auto progress = state->load_progress();
  ASSERT_TRUE(progress.ok()) << progress.error();
  EXPECT_EQ(progress->ladder_rung, "sh-skill1");
  LadderFixture f;
  EvaluatorLadder resumed = f.make("sh:0:1,sh:1:2", progress->ladder_rung);
  EXPECT_EQ(resumed.rung(), 1u);
  EXPECT_NE(f.log().find("in play: sh-skill1 (rung 2 of 2)"), std::string::npos) << f.log();
  EXPECT_EQ(series(f.text(), "chessrl_eval_ladder_rung"), "2");
  // A saved rung that is not on the ladder given now: back to its first rung, said.
  LadderFixture g;
  EvaluatorLadder other = g.make("sh:2:3,sh:4:5", progress->ladder_rung);
  EXPECT_EQ(other.rung(), 0u);
  EXPECT_NE(g.log().find("the saved ladder rung 'sh-skill1' is not on --ladder sh:2:3,sh:4:5: "
                         "starting at its first rung"),
            std::string::npos)
      << g.log();
  fs::remove_all(dir);
}

TEST(EvaluatorLadderTest, AMissingEngineTurnsTheLadderOffSayingSoOnce) {
  LadderFixture f;
  EvaluatorLadder ladder = f.make("/nonexistent/stockfish:0:1,/nonexistent/stockfish:1:2");
  EXPECT_FALSE(ladder.active());
  EXPECT_EQ(ladder.saved_label(), "");
  ASSERT_EQ(f.lines.size(), 1u) << f.log();
  EXPECT_NE(f.lines[0].find("no /nonexistent/stockfish on PATH or in /usr/games: the Stockfish "
                            "ladder (--ladder /nonexistent/stockfish:0:1,/nonexistent/"
                            "stockfish:1:2) is off, the other anchors play"),
            std::string::npos)
      << f.log();
  EXPECT_EQ(series(f.text(), "chessrl_eval_ladder_rung"), "0");
  // No ladder at all: nothing said, rung 0.
  LadderFixture g;
  EXPECT_FALSE(g.make("").active());
  EXPECT_TRUE(g.lines.empty()) << g.log();
  EXPECT_EQ(series(g.text(), "chessrl_eval_ladder_rung"), "0");
}

}  // namespace
}  // namespace chessrl::evaluator_service
