// `chessrl curve` end to end (label e2e): a run directory with two tiny saved
// versions, the binary run twice. Asserts the table's rows, that the rerun
// plays nothing (every row reused, quickly), the plot is a PNG, and the
// errors for a run directory without models.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/torch_backend.h"

namespace chessrl {
namespace {
namespace fs = std::filesystem;

struct ToolRun {
  int status = -1;
  std::string out, err;
  double seconds = 0;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The tool with `args` (shell words), its stdout and stderr kept apart.
// `env` (NAME=VALUE words) is put before the command.
ToolRun run_tool(const fs::path& dir, const std::string& args, const std::string& env = "") {
  const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  const auto start = std::chrono::steady_clock::now();
  const int raw = std::system(
      (env + "'" + CHESSRL_BINARY + "' " + args + " >'" + out + "' 2>'" + err + "'").c_str());
  ToolRun r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = read_all(out);
  r.err = read_all(err);
  return r;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

class CurveE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("chessrl_curve_e2e_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run" / "evaluator" / "models");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A tiny untrained network saved as the evaluator saves version `version`.
  void save_version(int version, std::int64_t created_ms) {
    nn::ModelInfo info;
    info.step = version * 100;
    info.version = version;
    info.created_ms = created_ms;
    const std::string path =
        (dir_ / "run" / "evaluator" / "models" / ("model-v" + std::to_string(version) + ".chrl"))
            .string();
    auto saved = nn::save_checkpoint_file(
        nn::fresh_checkpoint({1, 8}, static_cast<std::uint64_t>(version), info), path);
    ASSERT_TRUE(saved.ok()) << saved.error();
  }

  fs::path dir_;
};

TEST_F(CurveE2e, PlaysEveryVersionOnceThenReusesTheTable) {
  const std::int64_t t0 = nn::unix_millis_now();
  save_version(1, t0);
  save_version(2, t0 + 90'000);
  const std::string run = (dir_ / "run").string();
  const std::string args = "curve --dir '" + run + "' --pairs 1 --visits 2 --stockfish off";

  ToolRun first = run_tool(dir_, args);
  ASSERT_EQ(first.status, 0) << first.err;
  const std::string tsv = read_all(run + "/curve/curve.tsv");
  EXPECT_EQ(count(tsv, "\n"), 1 + 2 * 3 - 1)
      << "a header, then 2 versions x 3 anchors, less v1 against itself:\n"
      << tsv;
  EXPECT_EQ(count(tsv, "\tv1\t1\t2\t300\t2\t"), 1) << "v2 against the first version\n" << tsv;
  EXPECT_NE(first.err.find("v1 (step 100, 0.0 min) vs v1: itself, not played"), std::string::npos)
      << first.err;
  EXPECT_EQ(count(tsv, "\trandom\t1\t2\t300\t2\t"), 2) << tsv;
  EXPECT_EQ(count(tsv, "\tgreedy\t1\t2\t300\t2\t"), 2) << tsv;
  EXPECT_NE(tsv.find("\n2\t200\t1.50\t"), std::string::npos) << "v2: step 200, 1.5 min\n" << tsv;
  EXPECT_NE(first.err.find("note: no started_ms in " + run + "/local.json or"), std::string::npos)
      << first.err;
  EXPECT_NE(first.err.find("v2 (step 200, 1.5 min) vs greedy: +"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("(6/6, "), std::string::npos) << first.err;
  EXPECT_EQ(count(first.err, ": reused: "), 0) << first.err;
  EXPECT_NE(first.out.find("version"), std::string::npos) << "the table on stdout";
  EXPECT_NE(first.out.find("wrote " + run + "/curve/curve.png"), std::string::npos) << first.out;

  // The plot (gnuplot-nox is in deps/apt.txt: missing, this fails).
  const std::string png = read_all(run + "/curve/curve.png");
  ASSERT_GE(png.size(), 8u) << "no curve.png: " << first.err;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_NE(read_all(run + "/curve/curve.gp").find("minutes of training"), std::string::npos);

  ToolRun second = run_tool(dir_, args);
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(count(second.err, ": reused: "), 5) << second.err;
  EXPECT_NE(second.err.find("0 matches played, 5 reused"), std::string::npos) << second.err;
  EXPECT_LT(second.seconds, 10.0) << "a rerun loads no network and plays no game";
  EXPECT_EQ(read_all(run + "/curve/curve.tsv"), tsv) << "the table is unchanged";

  // Without gnuplot: the table, a message saying what to install, exit status 0.
  fs::remove(run + "/curve/curve.png");
  ToolRun no_gnuplot = run_tool(dir_, args, "PATH=/nonexistent ");
  ASSERT_EQ(no_gnuplot.status, 0) << no_gnuplot.err;
  EXPECT_NE(no_gnuplot.err.find("gnuplot not found: install gnuplot-nox"), std::string::npos)
      << no_gnuplot.err;
  EXPECT_NE(no_gnuplot.err.find("the table is in " + run + "/curve/curve.tsv"), std::string::npos)
      << no_gnuplot.err;
  EXPECT_FALSE(fs::exists(run + "/curve/curve.png"));

  // A different --max-plies is a different point: played again, the old rows kept.
  ToolRun third = run_tool(dir_, args + " --max-plies 40 --every 5 --no-plot");
  ASSERT_EQ(third.status, 0) << third.err;
  EXPECT_EQ(count(read_all(run + "/curve/curve.tsv"), "\n"), 1 + 5 + 5);

  // A damaged table is named, not overwritten.
  { std::ofstream(run + "/curve/curve.tsv", std::ios::app) << "garbage\n"; }
  ToolRun damaged = run_tool(dir_, args);
  EXPECT_NE(damaged.status, 0);
  EXPECT_NE(damaged.err.find(run + "/curve/curve.tsv:12: expected 16 tab-separated fields"),
            std::string::npos)
      << damaged.err;
}

TEST_F(CurveE2e, ARunWithoutModelsIsNamed) {
  const std::string run = (dir_ / "run").string();
  ToolRun empty = run_tool(dir_, "curve --dir '" + run + "' --stockfish off");
  EXPECT_EQ(empty.status, 1);
  EXPECT_NE(empty.err.find(run + "/evaluator/models: no model-vN.chrl files"), std::string::npos)
      << empty.err;
  ToolRun missing = run_tool(dir_, "curve --dir '" + run + "/nowhere' --stockfish off");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find(run + "/nowhere/evaluator/models: no such directory"),
            std::string::npos)
      << missing.err;
}

}  // namespace
}  // namespace chessrl
