// The parts of `chessrl curve` that play no games, kept apart so unit tests
// reach them without LibTorch: the saved versions of a run and which of them
// to play, the time axis, curve.tsv (written, read back and reused), the
// self-play statistics merged into versions.tsv, the printed table and the
// gnuplot script. Plain data and free functions; thread-safe for distinct
// objects.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chessrl/core/files.h"
#include "chessrl/core/result.h"
#include "chessrl/selfplay/version_stats.h"

namespace chessrl::tool::curve {

// A model version the evaluator saved: RUN/evaluator/models/model-vN.chrl.
struct SavedVersion {
  std::int64_t version = 0;  // N of the file name
  std::int64_t step = 0;     // training steps (checkpoint metadata)
  std::int64_t created_ms = 0;
  std::string path;
};

// Every model-vN.chrl in `models_dir`, by version. Fails naming the path when
// the directory is missing, holds no model-vN.chrl, or a file's metadata does
// not parse. Reads only the metadata (no LibTorch).
Result<std::vector<SavedVersion>> list_versions(const std::string& models_dir);

// Every `every`th of `versions` (in the given order), always with the first
// and the last. Precondition: every >= 1.
std::vector<SavedVersion> select_every(const std::vector<SavedVersion>& versions, int every);

// Where the time axis starts (unix ms), and a note saying why when it is not
// the run's start.
struct TimeOrigin {
  std::int64_t ms = 0;
  std::string note;  // empty when started_ms was known
};
// When training in `run_dir` began (unix ms): the integer started_ms of
// RUN/local.json (there while `chessrl local` runs), else the number in
// RUN/stats/started_ms (kept across resumed runs, and after the run ends, when
// local.json is removed); nullopt when neither says.
std::optional<std::int64_t> read_started_ms(const std::string& run_dir);
// `started_ms` when known, else the earliest created_ms among `versions` (not
// empty), with a note naming where started_ms was looked for.
TimeOrigin time_origin(std::optional<std::int64_t> started_ms,
                       const std::vector<SavedVersion>& versions, const std::string& run_dir);
// Minutes of training at `created_ms`.
double minutes_since(const TimeOrigin& origin, std::int64_t created_ms);

// What makes a played match reusable: the same version against the same
// anchor (its label) under the same conditions.
struct CurveKey {
  std::int64_t version = 0;
  std::string anchor;
  int pairs = 0, visits = 0, max_plies = 0, leaves = 8;
  auto operator<=>(const CurveKey&) const = default;
};

// One row of curve.tsv: a version against an anchor.
struct CurveRow {
  std::int64_t version = 0, step = 0;
  double minutes = 0;
  std::string anchor;  // eval::anchor_label of its spec
  int pairs = 0, visits = 0, max_plies = 0;
  int leaves = 8;  // MCTS leaves a round (a table without the column was made at 8)
  int games = 0, wins = 0, draws = 0, losses = 0;
  double score = 0, elo = 0, lower = 0, upper = 0;
  CurveKey key() const { return {version, anchor, pairs, visits, max_plies, leaves}; }
};

// The header line of curve.tsv (no newline): the column names, tab-separated.
std::string curve_header();
// The whole file: the header, then `rows` sorted by key, one a line.
std::string format_curve_tsv(std::vector<CurveRow> rows);
// Parses curve.tsv's text; `path` names the file in errors, which give the
// line: a header other than curve_header(), a wrong number of fields, a field
// that is not a number, counts that do not add up, or a key seen twice.
Result<std::vector<CurveRow>> parse_curve_tsv(std::string_view text, const std::string& path);
// The rows of the file at `path`; none when it does not exist.
Result<std::vector<CurveRow>> read_curve_tsv(const std::string& path);

// Self-play's statistics by model version (libs/selfplay's GameStats, whose
// JSON lines self-play appends), merged over the lines that name a version
// (one a replica, or a restart): counts summed, means weighted by positions.
using StatsByVersion = std::map<std::uint64_t, selfplay::GameStats>;

// Adds the JSON lines of `text` (RUN/stats/selfplay-*.jsonl) to `stats`.
// Blank lines are skipped; a last line with no newline that does not parse is
// one being written, skipped with a note in `notes`. Any other malformed line
// fails naming `path` and the line.
Result<void> merge_stats_jsonl(std::string_view text, const std::string& path,
                               StatsByVersion& stats, std::vector<std::string>& notes);
// Every selfplay-*.jsonl in `stats_dir`, merged (none when the directory is
// absent); `files` gets how many files were read.
Result<StatsByVersion> read_selfplay_stats(const std::string& stats_dir, int& files,
                                           std::vector<std::string>& notes);
// versions.tsv: version, games, decisive share, mean plies, policy entropy,
// value mse, then the `top` most common terminations overall as shares of
// games (and "other" for the rest, when there are more).
std::string format_versions_tsv(const StatsByVersion& stats, int top = 4);

// The anchor specs of `chessrl curve --stockfish`: "auto" plays the rungs of
// eval::kDefaultLadder (stockfish-skill0: Skill Level 0 at depth 1,
// stockfish-skill1: Skill Level 1 at depth 2) over `found`, the stockfish
// binary found, and none when nullopt; "off" none; a uci:... anchor spec as
// given; anything else is a ladder as chessrl-evaluator --ladder reads it
// (PROGRAM:SKILL:DEPTH, comma-separated), one anchor per rung. Errors name
// --stockfish and the problem.
Result<std::vector<std::string>> stockfish_specs(const std::string& stockfish,
                                                 const std::optional<std::string>& found);

// `rows` as an aligned table for the terminal.
std::string format_table(const std::vector<CurveRow>& rows);

// The plot: two stacked panels, Elo against training steps and against
// minutes of training, one series per anchor (in `anchors`' order) with its
// 95% interval; the data is inline, so the script alone redraws the PNG.
struct PlotOptions {
  std::string run_dir;  // named in the title
  std::string png_path;
  std::string terminal = "pngcairo";  // or "png" where cairo is missing
  int games_per_point = 0, visits = 0;
  std::vector<std::string> anchors;  // labels
  double clamp = 800;                // Elo shown within +-clamp; points past it sit at the edge
};
std::string gnuplot_script(const PlotOptions& options, const std::vector<CurveRow>& rows);

using chessrl::write_file_atomically;  // chessrl/core/files.h

}  // namespace chessrl::tool::curve
