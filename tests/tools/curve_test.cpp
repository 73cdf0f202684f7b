// `chessrl curve`'s game-free parts (tools/chessrl/curve/curve.h): curve.tsv round
// trip, reuse keys and errors, the self-play statistics merge, --every, the
// time origin, the gnuplot script, and the saved-version listing.
#include "curve/curve.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "chessrl/nn/checkpoint.h"
#include "chessrl/selfplay/version_stats.h"

namespace chessrl::tool::curve {
namespace {
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("chessrl_curve_test_" + std::to_string(::getpid()) + "_" + std::to_string(count_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string path(const std::string& name = "") const { return (path_ / name).string(); }

 private:
  fs::path path_;
  static inline int count_ = 0;
};

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

CurveRow row(std::int64_t version, const std::string& anchor, int wins, int draws, int losses) {
  CurveRow r;
  r.version = version;
  r.step = version * 200;
  r.minutes = static_cast<double>(version) * 2.5;
  r.anchor = anchor;
  r.pairs = 10;
  r.visits = 32;
  r.max_plies = 300;
  r.games = wins + draws + losses;
  r.wins = wins;
  r.draws = draws;
  r.losses = losses;
  r.score = (wins + draws / 2.0) / r.games;
  r.elo = -53.25;
  r.lower = -130;
  r.upper = 20.5;
  return r;
}

std::vector<SavedVersion> versions(std::initializer_list<std::int64_t> numbers) {
  std::vector<SavedVersion> out;
  for (std::int64_t n : numbers) out.push_back({n, n * 100, 1'000'000 + n * 60'000, ""});
  return out;
}

TEST(CurveTsv, RoundTripsSortedByKey) {
  const std::vector<CurveRow> rows = {row(2, "random", 12, 6, 2), row(1, "random", 3, 10, 7),
                                      row(1, "greedy", 0, 1, 19)};
  const std::string text = format_curve_tsv(rows);
  EXPECT_EQ(text.substr(0, text.find('\n')), curve_header());
  EXPECT_NE(curve_header().find("max_plies"), std::string::npos);
  auto parsed = parse_curve_tsv(text, "curve.tsv");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].key(), rows[2].key()) << "sorted: v1 greedy first";
  EXPECT_EQ((*parsed)[1].key(), rows[1].key());
  EXPECT_EQ((*parsed)[2].key(), rows[0].key());
  const CurveRow& r = (*parsed)[1];
  EXPECT_EQ(r.step, 200);
  EXPECT_DOUBLE_EQ(r.minutes, 2.5);
  EXPECT_EQ(r.wins, 3);
  EXPECT_EQ(r.draws, 10);
  EXPECT_EQ(r.losses, 7);
  EXPECT_DOUBLE_EQ(r.score, 0.4);
  EXPECT_DOUBLE_EQ(r.elo, -53.2) << "one decimal in the file";
  EXPECT_DOUBLE_EQ(r.upper, 20.5);
  EXPECT_EQ(format_curve_tsv(*parsed), text) << "a second round trip changes nothing";
}

TEST(CurveTsv, KeyIsVersionAnchorPairsVisitsAndMaxPlies) {
  const CurveRow a = row(3, "greedy", 1, 1, 18);
  CurveRow b = a;
  b.wins = 2;
  b.losses = 17;
  b.step = 999;
  b.minutes = 1;
  EXPECT_EQ(a.key(), b.key()) << "results and the time axis are not part of the key";
  for (auto change : std::initializer_list<void (*)(CurveRow&)>{
           [](CurveRow& r) { r.version = 4; }, [](CurveRow& r) { r.anchor = "random"; },
           [](CurveRow& r) { r.pairs = 5; }, [](CurveRow& r) { r.visits = 64; },
           [](CurveRow& r) { r.max_plies = 200; }, [](CurveRow& r) { r.leaves = 2; }}) {
    CurveRow c = a;
    change(c);
    EXPECT_NE(c.key(), a.key());
  }
}

// A table written before the leaves column still reads, as 8 leaves (what
// every curve was played at then); the next write adds the column.
TEST(CurveTsv, ATableWithoutTheLeavesColumnReadsAsEightLeaves) {
  CurveRow r = row(1, "random", 3, 10, 7);
  r.leaves = 2;
  const std::string text = format_curve_tsv({r});
  EXPECT_NE(text.find("\tleaves\n"), std::string::npos) << text;
  auto parsed = parse_curve_tsv(text, "curve.tsv");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ((*parsed)[0].leaves, 2);
  // The old table: drop the last column of every line.
  std::string old;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    old += line.substr(0, line.rfind('\t')) + "\n";
    start = end + 1;
  }
  parsed = parse_curve_tsv(old, "curve.tsv");
  ASSERT_TRUE(parsed.ok()) << parsed.error() << "\n" << old;
  EXPECT_EQ((*parsed)[0].leaves, 8);
  EXPECT_EQ((*parsed)[0].wins, 3);
  // An old header with a new row is refused, naming the count.
  parsed = parse_curve_tsv(old.substr(0, old.find('\n') + 1) + text.substr(text.find('\n') + 1),
                           "curve.tsv");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().find("expected 15 tab-separated fields, found 16"), std::string::npos)
      << parsed.error();
}

TEST(CurveTsv, MissingFileHasNoRows) {
  TempDir dir;
  auto rows = read_curve_tsv(dir.path("curve.tsv"));
  ASSERT_TRUE(rows.ok()) << rows.error();
  EXPECT_TRUE(rows->empty());
  write(dir.path("curve.tsv"), format_curve_tsv({row(1, "random", 1, 0, 1)}));
  rows = read_curve_tsv(dir.path("curve.tsv"));
  ASSERT_TRUE(rows.ok()) << rows.error();
  EXPECT_EQ(rows->size(), 1u);
}

TEST(CurveTsv, MalformedFilesNameTheFileAndLine) {
  const std::string header = curve_header() + "\n";
  const std::string good = format_curve_tsv({row(1, "random", 1, 0, 1)}).substr(header.size());
  auto error = [](const std::string& text) {
    auto r = parse_curve_tsv(text, "/run/curve/curve.tsv");
    return r.ok() ? std::string("(parsed)") : r.error();
  };
  EXPECT_EQ(error(""),
            "/run/curve/curve.tsv: empty; expected the header line (" + curve_header() + ")");
  EXPECT_EQ(error("version\tstep\n"),
            "/run/curve/curve.tsv:1: not the header of a chessrl curve table; expected " +
                curve_header() + " (move the file away to start a new table)");
  EXPECT_EQ(error(header + good + "1\t2\t3\n"),
            "/run/curve/curve.tsv:3: expected 16 tab-separated fields, found 3");
  std::string bad = good;
  bad.replace(bad.find("\t300\t"), 5, "\tmany\t");
  EXPECT_EQ(error(header + bad), "/run/curve/curve.tsv:2: max_plies 'many' is not a number");
  bad = good;
  bad.replace(0, 1, "1.5");
  EXPECT_EQ(error(header + bad), "/run/curve/curve.tsv:2: a count is not an integer");
  bad = good;
  bad.replace(bad.find("\t2\t1\t0\t1\t"), 9, "\t2\t1\t1\t1\t");
  EXPECT_EQ(error(header + bad), "/run/curve/curve.tsv:2: wins + draws + losses is not games");
  EXPECT_EQ(error(header + good + good),
            "/run/curve/curve.tsv:3: a second row for v1 vs random with the same pairs, visits, "
            "max_plies and leaves");
}

// A line as self-play writes it (selfplay::to_json).
std::string stats_line(std::uint64_t version, std::uint64_t games, std::uint64_t decisive,
                       std::uint64_t plies, std::uint64_t positions, double entropy, double mse,
                       const std::map<std::string, std::uint64_t>& terminations) {
  selfplay::GameStats s;
  s.version = version;
  s.games = games;
  s.decisive = decisive;
  s.plies = plies;
  s.positions = positions;
  s.entropy_sum = entropy * static_cast<double>(positions);
  s.value_sq_error_sum = mse * static_cast<double>(positions);
  s.terminations = terminations;
  return selfplay::to_json(s) + "\n";
}

TEST(CurveStats, MergesLinesOfOneVersion) {
  StatsByVersion stats;
  std::vector<std::string> notes;
  const std::string a =
      stats_line(3, 10, 4, 800, 100, 2.0, 0.5, {{"checkmate", 4}, {"move_limit", 6}}) + "\n" +
      stats_line(4, 2, 2, 100, 10, 1.0, 0.2, {{"checkmate", 2}});
  const std::string b =
      stats_line(3, 10, 6, 1200, 300, 1.0, 0.1, {{"checkmate", 6}, {"threefold", 4}});
  ASSERT_TRUE(merge_stats_jsonl(a, "selfplay-0.jsonl", stats, notes).ok());
  ASSERT_TRUE(merge_stats_jsonl(b, "selfplay-1.jsonl", stats, notes).ok());
  EXPECT_TRUE(notes.empty());
  ASSERT_EQ(stats.size(), 2u);
  const selfplay::GameStats& s = stats.at(3);
  EXPECT_EQ(s.version, 3u);
  EXPECT_EQ(s.games, 20u);
  EXPECT_EQ(s.decisive, 10u);
  EXPECT_EQ(s.plies, 2000u);
  EXPECT_EQ(s.positions, 400u);
  EXPECT_DOUBLE_EQ(s.policy_entropy(), 1.25) << "weighted by positions";
  EXPECT_DOUBLE_EQ(s.value_mse(), 0.2);
  EXPECT_EQ(s.terminations.at("checkmate"), 10u);
  EXPECT_EQ(s.terminations.at("threefold"), 4u);

  const std::string tsv = format_versions_tsv(stats, 2);
  EXPECT_EQ(tsv,
            "version\tgames\tdecisive\tmean_plies\tpolicy_entropy\tvalue_mse\tcheckmate\tmove_"
            "limit\tother\n"
            "3\t20\t0.500\t100.0\t1.2500\t0.2000\t0.500\t0.300\t0.200\n"
            "4\t2\t1.000\t50.0\t1.0000\t0.2000\t1.000\t0.000\t0.000\n");
}

TEST(CurveStats, MalformedLinesNameTheFileAndLine) {
  auto error = [](const std::string& text) {
    StatsByVersion stats;
    std::vector<std::string> notes;
    auto r = merge_stats_jsonl(text, "stats/selfplay-0.jsonl", stats, notes);
    return r.ok() ? std::string("(merged)") : r.error();
  };
  const std::string good = stats_line(1, 2, 1, 80, 20, 1.5, 0.3, {{"checkmate", 1}});
  EXPECT_EQ(error(good + "{oops\n"), "stats/selfplay-0.jsonl:2: not a JSON object");
  EXPECT_EQ(error(good + "\n[1,2]\n"), "stats/selfplay-0.jsonl:3: not a JSON object");
  std::string bad = good;
  bad.replace(bad.find("\"games\":2"), 9, "\"games\":-2");
  EXPECT_EQ(error(bad), "stats/selfplay-0.jsonl:1: 'games' is missing or not a count");
}

TEST(CurveStats, AnUnfinishedLastLineIsSkippedWithANote) {
  StatsByVersion stats;
  std::vector<std::string> notes;
  auto r = merge_stats_jsonl(stats_line(1, 2, 1, 80, 20, 1.5, 0.3, {}) + R"({"version":2,"ga)",
                             "selfplay-0.jsonl", stats, notes);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(stats.size(), 1u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("selfplay-0.jsonl:2: an unfinished last line"), std::string::npos);
}

TEST(CurveStats, ReadsEverySelfplayFileOfTheDirectory) {
  TempDir dir;
  int files = -1;
  std::vector<std::string> notes;
  auto none = read_selfplay_stats(dir.path("stats"), files, notes);
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(files, 0);
  fs::create_directories(dir.path("stats"));
  write(dir.path("stats/selfplay-0.jsonl"), stats_line(1, 2, 1, 80, 20, 1.5, 0.3, {}));
  write(dir.path("stats/selfplay-1.jsonl"), stats_line(1, 3, 3, 80, 20, 1.5, 0.3, {}));
  write(dir.path("stats/started_ms"), "1000\n");
  write(dir.path("stats/other.jsonl"), "not read\n");
  auto stats = read_selfplay_stats(dir.path("stats"), files, notes);
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(files, 2);
  EXPECT_EQ(stats->at(1).games, 5u);
  EXPECT_EQ(stats->at(1).decisive, 4u);
  write(dir.path("stats/selfplay-2.jsonl"), "{}\n");
  stats = read_selfplay_stats(dir.path("stats"), files, notes);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.error(),
            dir.path("stats/selfplay-2.jsonl") + ":1: 'version' is missing or not a count");
}

TEST(CurveVersions, EveryNthWithTheFirstAndTheLast) {
  auto numbers = [](const std::vector<SavedVersion>& v) {
    std::vector<std::int64_t> out;
    for (const auto& s : v) out.push_back(s.version);
    return out;
  };
  const auto all = versions({1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(numbers(select_every(all, 1)), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(numbers(select_every(all, 3)), (std::vector<std::int64_t>{1, 4, 7}));
  EXPECT_EQ(numbers(select_every(all, 4)), (std::vector<std::int64_t>{1, 5, 7}));
  EXPECT_EQ(numbers(select_every(all, 100)), (std::vector<std::int64_t>{1, 7}));
  EXPECT_EQ(numbers(select_every(versions({9}), 4)), (std::vector<std::int64_t>{9}));
  // By position, not by number: versions the evaluator skipped leave gaps.
  EXPECT_EQ(numbers(select_every(versions({1, 3, 8, 9, 12}), 2)),
            (std::vector<std::int64_t>{1, 8, 12}));
}

TEST(CurveVersions, TimeOriginIsStartedMsElseTheEarliestVersion) {
  TempDir dir;
  const std::string run = dir.path();
  const std::string local = dir.path("local.json");
  const auto v = versions({2, 3});
  EXPECT_EQ(read_started_ms(run), std::nullopt) << "no file";
  write(local, R"({"dir":"x","children":[]})");
  EXPECT_EQ(read_started_ms(run), std::nullopt) << "no field";
  write(local, R"({"started_ms":"soon"})");
  EXPECT_EQ(read_started_ms(run), std::nullopt) << "not an integer";
  write(local, "{not json");
  EXPECT_EQ(read_started_ms(run), std::nullopt) << "not JSON";

  TimeOrigin fallback = time_origin(read_started_ms(run), v, run);
  EXPECT_EQ(fallback.ms, 1'120'000);
  EXPECT_EQ(fallback.note, "no started_ms in " + local + " or " + dir.path("stats/started_ms") +
                               ": minutes count from the earliest saved version (v2)");
  EXPECT_DOUBLE_EQ(minutes_since(fallback, v[1].created_ms), 1.0);

  // After the run, local.json is gone and stats/started_ms says.
  fs::create_directories(dir.path("stats"));
  write(dir.path("stats/started_ms"), "1060000\n");
  EXPECT_EQ(read_started_ms(run), 1'060'000);
  // While it runs, local.json says first.
  write(local, R"({"started_ms":1000000,"children":[]})");
  TimeOrigin started = time_origin(read_started_ms(run), v, run);
  EXPECT_EQ(started.ms, 1'000'000);
  EXPECT_TRUE(started.note.empty());
  EXPECT_DOUBLE_EQ(minutes_since(started, v[0].created_ms), 2.0);
}

TEST(CurveVersions, ListsSavedModelsByVersion) {
  TempDir dir;
  auto missing = list_versions(dir.path("models"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find(dir.path("models") + ": no such directory"), std::string::npos);
  fs::create_directories(dir.path("models"));
  auto empty = list_versions(dir.path("models"));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error(), dir.path("models") + ": no model-vN.chrl files");

  for (int version : {10, 2}) {
    nn::Checkpoint c;
    c.info.config = {1, 8};
    c.info.step = version * 100;
    c.info.version = version;
    c.info.created_ms = 5000 + version;
    ASSERT_TRUE(
        nn::save_checkpoint_file(c, dir.path("models/model-v" + std::to_string(version) + ".chrl"))
            .ok());
  }
  write(dir.path("models/model-v3.chrl.tmp"), "half written");
  auto listed = list_versions(dir.path("models"));
  ASSERT_TRUE(listed.ok()) << listed.error();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].version, 2) << "by number, not by name";
  EXPECT_EQ((*listed)[0].step, 200);
  EXPECT_EQ((*listed)[0].created_ms, 5002);
  EXPECT_EQ((*listed)[1].version, 10);

  write(dir.path("models/model-v4.chrl"), "not a checkpoint");
  auto broken = list_versions(dir.path("models"));
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().rfind(dir.path("models/model-v4.chrl") + ": ", 0), 0u) << broken.error();
}

TEST(CurvePlot, ScriptHasBothPanelsAndEveryAnchorsSeries) {
  PlotOptions o;
  o.run_dir = "/work/exps/it's";
  o.png_path = "/tmp/out/curve.png";
  o.games_per_point = 20;
  o.visits = 32;
  o.anchors = {"random", "greedy", "stockfish-skill0"};
  std::vector<CurveRow> rows = {row(1, "random", 10, 5, 5), row(2, "random", 15, 5, 0),
                                row(1, "greedy", 0, 0, 20)};
  rows[2].elo = rows[2].lower = -1200;
  const std::string s = gnuplot_script(o, rows);
  EXPECT_NE(s.find("set terminal pngcairo"), std::string::npos);
  EXPECT_NE(s.find("set output \"/tmp/out/curve.png\""), std::string::npos);
  EXPECT_NE(s.find("set multiplot layout 2,1"), std::string::npos);
  EXPECT_NE(s.find("set xlabel \"training steps\""), std::string::npos);
  EXPECT_NE(s.find("set xlabel \"minutes of training\""), std::string::npos);
  EXPECT_NE(s.find("Learning curve of /work/exps/it's\\n20 games a point, 32 visits"),
            std::string::npos);
  EXPECT_NE(s.find("drawn at the edge"), std::string::npos);
  EXPECT_NE(s.find("plot 0 with lines"), std::string::npos) << "the zero line";
  // Two panels, each with the two anchors that have rows, in the given order.
  std::size_t count = 0;
  for (std::size_t at = 0; (at = s.find("title \"random\"", at)) != std::string::npos; ++at)
    ++count;
  EXPECT_EQ(count, 2u);
  // Shifted sideways by 0.8% of the span (200 steps, 2.5 minutes) each.
  EXPECT_NE(s.find("$anchor1 using ($1+-0.8):3:4:5 title \"random\""), std::string::npos) << s;
  EXPECT_NE(s.find("$anchor2 using ($2+0.01):3:4:5 title \"greedy\""), std::string::npos) << s;
  EXPECT_NE(s.find("set x2tics (\"v1\" 200, \"v2\" 400)"), std::string::npos) << s;
  EXPECT_EQ(s.find("stockfish-skill0\""), std::string::npos) << "no rows, no series";
  // The data inline, random's two versions in order; greedy's -1200 clamped to -800.
  EXPECT_NE(s.find("$anchor1 << EOD\n200 2.50 -53.2 -130.0 20.5 1\n400 5.00 -53.2 -130.0 "
                   "20.5 2\nEOD\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("$anchor2 << EOD\n200 2.50 -800.0 -800.0 20.5 1\nEOD\n"), std::string::npos)
      << s;
  EXPECT_NE(s.find("unset multiplot"), std::string::npos);

  o.terminal = "png";
  EXPECT_NE(gnuplot_script(o, rows).find("set terminal png size"), std::string::npos);
}

TEST(CurveTable, AlignsColumns) {
  const std::string table =
      format_table({row(1, "random", 3, 10, 7), row(12, "stockfish-skill0", 0, 0, 20)});
  std::istringstream lines(table);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(header.find("version"), 0u);
  EXPECT_EQ(first.find("random"), second.find("stockfish-skill0")) << table;
  EXPECT_EQ(first.find('['), second.find('[')) << table;
  EXPECT_NE(first.find("0.400"), std::string::npos);
  EXPECT_NE(first.find("-53"), std::string::npos);
  EXPECT_NE(first.find("[-130, +20]"), std::string::npos) << table;
}

TEST(CurveFiles, WritesAtomically) {
  TempDir dir;
  ASSERT_TRUE(write_file_atomically(dir.path("a.tsv"), "one\n").ok());
  ASSERT_TRUE(write_file_atomically(dir.path("a.tsv"), "two\n").ok());
  std::ifstream in(dir.path("a.tsv"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "two\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1)
      << "no temporary file left";
  auto r = write_file_atomically(dir.path("no/such/dir/a.tsv"), "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rfind(dir.path("no/such/dir/a.tsv") + ": ", 0), 0u) << r.error();
}

// --stockfish: auto plays both rungs over the binary found (labels
// stockfish-skill0 and stockfish-skill1, so older curve.tsv rows of
// stockfish-skill0 are reused), a ladder one anchor per rung, a uci: spec as given.
TEST(CurveStockfish, AutoPlaysBothRungsOfTheLadderWhenStockfishIsFound) {
  auto both = stockfish_specs("auto", std::string("/usr/games/stockfish"));
  ASSERT_TRUE(both.ok()) << both.error();
  EXPECT_EQ(*both, (std::vector<std::string>{
                       "uci:/usr/games/stockfish;Skill Level=0;depth=1;name=stockfish-skill0",
                       "uci:/usr/games/stockfish;Skill Level=1;depth=2;name=stockfish-skill1"}));
  auto none = stockfish_specs("auto", std::nullopt);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_TRUE(stockfish_specs("off", std::string("/usr/games/stockfish"))->empty());
  auto ladder = stockfish_specs("stockfish:3:4", std::nullopt);
  ASSERT_TRUE(ladder.ok()) << ladder.error();
  EXPECT_EQ(*ladder,
            (std::vector<std::string>{"uci:stockfish;Skill Level=3;depth=4;name=stockfish-skill3"}));
  auto spec = stockfish_specs("uci:stockfish;nodes=100;name=sf100", std::nullopt);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(*spec, (std::vector<std::string>{"uci:stockfish;nodes=100;name=sf100"}));
  auto bad = stockfish_specs("stockfish:0:0", std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("--stockfish: ladder 'stockfish:0:0', rung 1"), std::string::npos)
      << bad.error();
  EXPECT_NE(bad.error().find("DEPTH '0'"), std::string::npos) << bad.error();
}

}  // namespace
}  // namespace chessrl::tool::curve
