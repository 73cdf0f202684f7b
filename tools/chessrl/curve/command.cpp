// chessrl curve: a run's learning curve. Every model version the evaluator of a
// `chessrl local` run saved (RUN/evaluator/models/model-vN.chrl) plays fixed
// anchors over paired openings; the results go to OUT/curve.tsv (reused by a
// rerun, so it can follow a run as it goes on), and gnuplot draws Elo against
// training steps and against minutes of training (OUT/curve.png). Self-play's
// per-version statistics, when the run wrote them, go to OUT/versions.tsv.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/eval/match.h"
#include "chessrl/eval/uci_engine.h"
#include "chessrl/mcts/random.h"
#include "chessrl/nn/model_limits.h"
#include "commands.h"
#include "curve/curve.h"
#include "match/players.h"

namespace chessrl::tool {
namespace {
namespace fs = std::filesystem;

struct CurveCommandOptions {
  std::string dir;
  std::string anchors = "random,greedy,first";
  std::string stockfish = "auto";
  int pairs = 10;
  // The evaluator's visits and move limit, so the curve matches what it reports.
  int visits = eval::kEvalVisits;
  int leaves = eval::MctsPlayerOptions{}.leaves_per_round;
  int max_plies = eval::kEvalMaxPlies;
  int threads = 2;
  std::uint64_t seed = 1;
  int every = 1;
  std::string out;
  bool no_plot = false;
  std::string device = "cpu";
  std::int64_t max_model_params = nn::kDefaultMaxModelParams;
};

struct Anchor {
  std::string spec, label;
};

// "first" in --anchors: the run's first saved version, searched like every
// other version. Its rows are labelled by that version ("v1"), so a cache
// written when another version was first is not taken for it.
constexpr const char* kFirst = "first";

// --anchors, then the Stockfish anchors --stockfish asks for; every spec parsed
// (so a typo fails before any game) and every label distinct.
std::vector<Anchor> anchor_list(const CurveCommandOptions& o, const curve::SavedVersion& first) {
  std::vector<std::pair<std::string, std::string>> specs;  // the spec, the option it came from
  std::size_t start = 0;
  while (start <= o.anchors.size()) {
    const std::size_t comma = std::min(o.anchors.find(',', start), o.anchors.size());
    const std::string spec = o.anchors.substr(start, comma - start);
    if (!spec.empty()) specs.emplace_back(spec, "--anchors");
    start = comma + 1;
  }
  // find_program also looks in /usr/games, where Debian installs stockfish
  // (not on root's PATH).
  const auto found = o.stockfish == "auto" ? find_program("stockfish") : std::nullopt;
  if (o.stockfish == "auto" && !found)
    std::fprintf(stderr, "note: no stockfish on PATH or in /usr/games: no Stockfish anchors\n");
  auto stockfish = curve::stockfish_specs(o.stockfish, found);
  if (!stockfish) throw Error(stockfish.error());
  for (const std::string& spec : *stockfish) specs.emplace_back(spec, "--stockfish");
  std::vector<Anchor> anchors;
  for (const auto& [spec, option] : specs) {
    std::string label;
    if (spec == kFirst) {
      label = "v" + std::to_string(first.version);
    } else {
      if (auto parsed = eval::parse_anchor(spec, 1); !parsed)
        throw Error(option + ": " + parsed.error());
      label = eval::anchor_label(spec);
    }
    const auto same = std::find_if(anchors.begin(), anchors.end(),
                                   [&](const Anchor& a) { return a.label == label; });
    if (same == anchors.end()) {
      anchors.push_back({spec, label});
    } else if (same->spec != spec) {
      // Rows are keyed by label: two anchors under one label would share them.
      throw Error("anchors '" + same->spec + "' and '" + spec + "' have the same label '" + label +
                  "' (give one a name=)");
    }  // else the same anchor twice: once is enough
  }
  if (anchors.empty()) throw Error("no anchors: give --anchors or --stockfish");
  return anchors;
}

std::atomic<bool> g_interrupted{false};
extern "C" void on_curve_interrupt(int) { g_interrupted = true; }

std::string elo_text(const curve::CurveRow& r) {
  char text[96];
  std::snprintf(text, sizeof text, "score %.3f elo %+.0f [%+.0f, %+.0f]", r.score, r.elo, r.lower,
                r.upper);
  return text;
}

// `program args...` with inherited stdout and stderr; its exit status, or -1
// when it could not be started.
int run_program(const std::vector<std::string>& argv) {
  ProcessSpec spec;
  spec.argv = argv;
  auto process = Process::start(spec);
  return process.ok() ? process->wait() : -1;
}

// pngcairo draws smoother lines and text; gnuplot lists the terminals it was built with.
std::string png_terminal(const std::string& gnuplot) {
  std::string listing;
  ProcessSpec spec;
  spec.argv = {gnuplot, "-e", "set terminal"};
  if (auto child = Subprocess::start(spec, /*merge_stderr=*/true); child.ok()) {
    child->close_stdin();  // gnuplot reads commands from stdin after -e
    while (auto line = child->read_line(std::chrono::seconds(10))) listing += *line + "\n";
  }
  return listing.find("pngcairo") != std::string::npos ? "pngcairo" : "png";
}

void run_curve(const CurveCommandOptions& o) {
  const fs::path run = o.dir;
  const std::string models_dir = (run / "evaluator" / "models").string();
  auto listed = curve::list_versions(models_dir);
  if (!listed) throw Error("--dir " + o.dir + ": " + listed.error());
  const std::vector<curve::SavedVersion>& versions = *listed;
  const std::vector<Anchor> anchors = anchor_list(o, versions.front());
  const curve::TimeOrigin origin =
      curve::time_origin(curve::read_started_ms(o.dir), versions, o.dir);
  if (!origin.note.empty()) std::fprintf(stderr, "note: %s\n", origin.note.c_str());
  const std::vector<curve::SavedVersion> selected = curve::select_every(versions, o.every);

  const fs::path out = o.out.empty() ? run / "curve" : fs::path(o.out);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error("--out " + out.string() + ": " + ec.message());
  const std::string tsv = (out / "curve.tsv").string();
  auto cached = curve::read_curve_tsv(tsv);
  if (!cached) throw Error(cached.error() + " (fix or move the file; it is never overwritten)");
  std::map<curve::CurveKey, curve::CurveRow> rows;
  for (curve::CurveRow& r : *cached) rows[r.key()] = std::move(r);

  eval::MatchOptions match;
  match.pairs = o.pairs;
  match.threads = o.threads;
  match.max_plies = o.max_plies;
  match.seed = o.seed;  // the same openings for every point: points differ by the model
  match.event = "chessrl curve";
  if (auto valid = match.validate(); !valid) throw Error(valid.error());

  const int total = static_cast<int>(selected.size() * anchors.size());
  std::fprintf(stderr,
               "curve: %zu of %zu versions (v%lld..v%lld) x %zu anchor%s, %d games each at %d "
               "visits, %d thread%s\n",
               selected.size(), versions.size(), static_cast<long long>(selected.front().version),
               static_cast<long long>(selected.back().version), anchors.size(),
               anchors.size() == 1 ? "" : "s", 2 * o.pairs, o.visits, o.threads,
               o.threads == 1 ? "" : "s");
  std::signal(SIGINT, on_curve_interrupt);
  std::signal(SIGTERM, on_curve_interrupt);
  const bool tty = ::isatty(STDERR_FILENO);
  std::vector<curve::CurveRow> shown;
  int done = 0, played = 0, itself = 0;
  for (const curve::SavedVersion& v : selected) {
    const double minutes = curve::minutes_since(origin, v.created_ms);
    char who[128];
    std::snprintf(who, sizeof who, "v%lld (step %lld, %.1f min)", static_cast<long long>(v.version),
                  static_cast<long long>(v.step), minutes);
    // Loaded only when one of its matches is missing.
    std::unique_ptr<Networks> networks;
    std::optional<eval::PlayerFactory> model;
    for (std::size_t a = 0; a < anchors.size(); ++a) {
      ++done;
      const curve::CurveKey key{v.version, anchors[a].label, o.pairs,
                                o.visits,  o.max_plies,        o.leaves};
      if (anchors[a].spec == kFirst && v.version == versions.front().version) {
        std::fprintf(stderr, "%s vs %s: itself, not played  (%d/%d)\n", who,
                     anchors[a].label.c_str(), done, total);
        ++itself;
        continue;
      }
      if (auto it = rows.find(key); it != rows.end()) {
        // The step and the time axis come from the model file and the run's start, not the cache.
        it->second.step = v.step;
        it->second.minutes = minutes;
        std::fprintf(stderr, "%s vs %s: reused: +%d =%d -%d %s  (%d/%d)\n", who,
                     anchors[a].label.c_str(), it->second.wins, it->second.draws, it->second.losses,
                     elo_text(it->second).c_str(), done, total);
        shown.push_back(it->second);
        continue;
      }
      if (!model) {
        networks = std::make_unique<Networks>(std::min(o.threads, 2 * o.pairs), o.leaves,
                                              o.device, o.max_model_params);
        model = make_side("model:" + v.path, "model", mcts::mix64(o.seed ^ (v.version << 8)),
                          o.visits, *networks, o.leaves);
      }
      const std::uint64_t anchor_seed =
          mcts::mix64(o.seed ^ (v.version << 8) ^ (static_cast<std::uint64_t>(a) + 1));
      auto anchor =
          anchors[a].spec == kFirst
              ? Result<eval::PlayerFactory>(make_side("model:" + versions.front().path, "first",
                                                      anchor_seed, o.visits, *networks,
                                                      o.leaves))
              : eval::parse_anchor(anchors[a].spec, anchor_seed);
      if (!anchor) throw Error(anchor.error());
      const auto started = Clock::now();
      ProgressLine progress;
      int games = 0;
      eval::MatchScore so_far;
      auto on_game = [&](const eval::MatchGame& g) {
        ++games;
        so_far.wins += g.first_score == 1.0;
        so_far.draws += g.first_score == 0.5;
        so_far.losses += g.first_score == 0.0;
        if (!g.forfeit.empty()) {
          progress.clear();
          std::fprintf(stderr, "forfeit: %s\n", g.forfeit.c_str());
        }
        if (tty)
          progress.show("%s vs %s: games %d/%d  +%d =%d -%d", who, anchors[a].label.c_str(), games,
                        2 * o.pairs, so_far.wins, so_far.draws, so_far.losses);
      };
      auto result = eval::play_match(*model, *anchor, match, on_game, &g_interrupted);
      progress.clear();
      if (!result)
        throw Error(std::string(who) + " vs " + anchors[a].label + ": " + result.error());
      if (g_interrupted)
        throw Error("interrupted: the " + std::to_string(played) +
                    " matches played before this one are in " + tsv);
      const eval::EloEstimate elo = result->elo();
      curve::CurveRow r;
      r.version = v.version;
      r.step = v.step;
      r.minutes = minutes;
      r.anchor = anchors[a].label;
      r.pairs = o.pairs;
      r.visits = o.visits;
      r.max_plies = o.max_plies;
      r.leaves = o.leaves;
      r.games = result->score.games();
      r.wins = result->score.wins;
      r.draws = result->score.draws;
      r.losses = result->score.losses;
      r.score = result->score.score();
      r.elo = elo.elo;
      r.lower = elo.lower;
      r.upper = elo.upper;
      rows[key] = r;
      shown.push_back(r);
      ++played;
      // After every match, so an interrupted or failed run keeps what it played.
      std::vector<curve::CurveRow> all;
      for (const auto& [k, row] : rows) all.push_back(row);
      if (auto w = curve::write_file_atomically(tsv, curve::format_curve_tsv(all)); !w)
        throw Error(w.error());
      const std::string forfeits =
          result->forfeits ? ", " + std::to_string(result->forfeits) + " forfeits" : "";
      std::fprintf(stderr, "%s vs %s: +%d =%d -%d %s  (%d/%d, %.0f s%s)\n", who,
                   anchors[a].label.c_str(), r.wins, r.draws, r.losses, elo_text(r).c_str(), done,
                   total, seconds_since(started), forfeits.c_str());
    }
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  // Written even when everything was reused: the minutes may have a new origin.
  {
    std::vector<curve::CurveRow> all;
    for (const auto& [k, row] : rows) all.push_back(row);
    if (auto w = curve::write_file_atomically(tsv, curve::format_curve_tsv(all)); !w)
      throw Error(w.error());
  }
  std::vector<std::string> written = {tsv};

  // Self-play's statistics per version, when this run's self-play wrote them.
  const std::string stats_dir = (run / "stats").string();
  std::vector<std::string> notes;
  int stats_files = 0;
  auto stats = curve::read_selfplay_stats(stats_dir, stats_files, notes);
  if (!stats) throw Error(stats.error());
  for (const std::string& note : notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  if (stats->empty()) {
    std::fprintf(stderr, "note: no self-play statistics (%s/selfplay-*.jsonl): no versions.tsv\n",
                 stats_dir.c_str());
  } else {
    const std::string path = (out / "versions.tsv").string();
    if (auto w = curve::write_file_atomically(path, curve::format_versions_tsv(*stats)); !w)
      throw Error(w.error());
    written.push_back(path);
  }

  std::string plot_note;
  if (!o.no_plot) {
    const std::string png = (out / "curve.png").string();
    const std::string script = (out / "curve.gp").string();
    const auto gnuplot = find_program("gnuplot");
    curve::PlotOptions p;
    p.run_dir = o.dir;
    p.png_path = png;
    p.terminal = gnuplot ? png_terminal(*gnuplot) : "pngcairo";
    p.games_per_point = 2 * o.pairs;
    p.visits = o.visits;
    for (const Anchor& a : anchors) p.anchors.push_back(a.label);
    if (auto w = curve::write_file_atomically(script, curve::gnuplot_script(p, shown)); !w)
      throw Error(w.error());
    written.push_back(script);
    if (!gnuplot) {
      plot_note = "gnuplot not found: install gnuplot-nox (deps/apt.txt), then run `gnuplot " +
                  script + "`; the table is in " + tsv;
    } else {
      const int rc = run_program({*gnuplot, script});
      if (rc != 0)
        throw Error("gnuplot " + script + " failed (exit status " + std::to_string(rc) +
                    "); the table is in " + tsv);
      written.push_back(png);
    }
  }

  std::printf("%s\n", curve::format_table(shown).c_str());
  for (const std::string& path : written) std::printf("wrote %s\n", path.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "curve: %d matches played, %d reused\n", played, total - played - itself);
  if (!plot_note.empty()) std::fprintf(stderr, "%s\n", plot_note.c_str());
}

}  // namespace

void add_curve_command(CLI::App& app) {
  auto o = std::make_shared<CurveCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "curve",
      "A run's learning curve: every saved model version against fixed anchors; a table "
      "(curve.tsv, reused by a rerun) and a plot of Elo against training steps and time");
  cmd->add_option("--dir", o->dir, "The run directory of `chessrl local --dir`")->required();
  cmd->add_option("--anchors", o->anchors,
                  "Anchors, comma-separated: random, greedy, first (the run's first saved "
                  "version, at the same visits) or uci:PROGRAM[;KEY=VALUE]...")
      ->capture_default_str();
  cmd->add_option("--stockfish", o->stockfish,
                  "auto: when a stockfish binary is found, add the ladder's two rungs, "
                  "stockfish-skill0 (Skill Level 0, depth 1) and stockfish-skill1 (Skill Level 1, "
                  "depth 2); off; a ladder as chessrl-evaluator --ladder takes it "
                  "(PROGRAM:SKILL:DEPTH, comma-separated, e.g. stockfish:0:1,stockfish:3:4), one "
                  "anchor per rung; or a uci:... anchor spec used as given")
      ->capture_default_str();
  cmd->add_option("--pairs", o->pairs, "Game pairs per version and anchor (2 games a pair)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--visits", o->visits, "MCTS root visits per move of the model")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--leaves", o->leaves, "MCTS leaves gathered per search round (virtual loss)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--max-plies", o->max_plies, "Plies after which a game is a draw")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--concurrent,--threads", o->threads,
                  "Games played at once, each on a thread")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the openings and the players' random choices")
      ->capture_default_str();
  cmd->add_option("--every", o->every,
                  "Play every Nth saved version (the first and the last always)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--out", o->out, "Where the table and the plot go (default: RUN/curve)");
  cmd->add_flag("--no-plot", o->no_plot, "Write the table only (no gnuplot)");
  cmd->add_option("--device", o->device, "Device of the networks: cpu, cuda or cuda:N")
      ->capture_default_str();
  cmd->add_option("--max-model-params", o->max_model_params,
                  "Refuse a saved model whose architecture has more parameters than this, before "
                  "allocating it (0: no ceiling)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->callback([o] { run_curve(*o); });
}

}  // namespace chessrl::tool
