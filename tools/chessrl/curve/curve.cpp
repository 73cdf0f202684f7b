// The game-free parts of `chessrl curve` (curve/curve.h).
#include "curve/curve.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "chessrl/eval/ladder.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/selfplay/version_stats.h"

namespace chessrl::tool::curve {
namespace fs = std::filesystem;

namespace {

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

template <class T>
bool parse_number(std::string_view field, T& out) {
  const char* end = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(field.data(), end, out);
  return ec == std::errc() && ptr == end && !field.empty();
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// A gnuplot string: double-quoted, so "\n" breaks a title's line; a backslash
// and a quote are escaped, so a path is taken as written.
std::string gnuplot_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

const char* const kColumns[] = {"version", "step",      "minutes", "anchor", "pairs",
                                "visits",  "max_plies", "games",   "wins",   "draws",
                                "losses",  "score",     "elo",     "lower",  "upper", "leaves"};
constexpr std::size_t kColumnCount = std::size(kColumns);
// Tables written before the leaves column: the first 15 columns, at 8 leaves.
constexpr std::size_t kOldColumnCount = kColumnCount - 1;

std::string header_of(std::size_t columns) {
  std::string line;
  for (std::size_t i = 0; i < columns; ++i) line += (i ? "\t" : "") + std::string(kColumns[i]);
  return line;
}

}  // namespace

Result<std::vector<SavedVersion>> list_versions(const std::string& models_dir) {
  std::error_code ec;
  if (!fs::is_directory(models_dir, ec))
    return fail(models_dir +
                ": no such directory (is this the --dir of a `chessrl local` run "
                "whose evaluator has saved a model?)");
  // Only the evaluator's final names: a temporary file beside one is not a model yet.
  static const std::regex kName(R"(model-v([0-9]{1,18})\.chrl)");
  std::vector<SavedVersion> versions;
  for (const auto& entry : fs::directory_iterator(models_dir, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, kName)) continue;
    SavedVersion v;
    v.version = std::stoll(m[1].str());
    v.path = entry.path().string();
    auto bytes = nn::read_file_bytes(v.path);
    if (!bytes) return fail(bytes.error());
    auto info = nn::parse_checkpoint_info(*bytes);
    if (!info) return fail(v.path + ": " + info.error());
    v.step = info->step;
    v.created_ms = info->created_ms;
    versions.push_back(std::move(v));
  }
  if (ec) return fail(models_dir + ": " + ec.message());
  if (versions.empty()) return fail(models_dir + ": no model-vN.chrl files");
  std::sort(versions.begin(), versions.end(),
            [](const SavedVersion& a, const SavedVersion& b) { return a.version < b.version; });
  return versions;
}

std::vector<SavedVersion> select_every(const std::vector<SavedVersion>& versions, int every) {
  std::vector<SavedVersion> out;
  for (std::size_t i = 0; i < versions.size(); ++i)
    if (i % static_cast<std::size_t>(every) == 0 || i + 1 == versions.size())
      out.push_back(versions[i]);
  return out;
}

std::optional<std::int64_t> read_started_ms(const std::string& run_dir) {
  if (std::ifstream in(fs::path(run_dir) / "local.json"); in) {
    const nlohmann::json state = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (state.is_object())
      if (const auto it = state.find("started_ms"); it != state.end() && it->is_number_integer())
        return it->get<std::int64_t>();
  }
  if (std::ifstream in(fs::path(run_dir) / "stats" / "started_ms"); in) {
    std::int64_t ms = 0;
    if (in >> ms && ms > 0) return ms;
  }
  return std::nullopt;
}

TimeOrigin time_origin(std::optional<std::int64_t> started_ms,
                       const std::vector<SavedVersion>& versions, const std::string& run_dir) {
  if (started_ms) return {*started_ms, ""};
  const auto first = std::min_element(
      versions.begin(), versions.end(),
      [](const SavedVersion& a, const SavedVersion& b) { return a.created_ms < b.created_ms; });
  return {first->created_ms, "no started_ms in " + (fs::path(run_dir) / "local.json").string() +
                                 " or " + (fs::path(run_dir) / "stats" / "started_ms").string() +
                                 ": minutes count from the earliest saved version (v" +
                                 std::to_string(first->version) + ")"};
}

double minutes_since(const TimeOrigin& origin, std::int64_t created_ms) {
  return static_cast<double>(created_ms - origin.ms) / 60000.0;
}

std::string curve_header() { return header_of(kColumnCount); }

std::string format_curve_tsv(std::vector<CurveRow> rows) {
  std::sort(rows.begin(), rows.end(),
            [](const CurveRow& a, const CurveRow& b) { return a.key() < b.key(); });
  std::string out = curve_header() + "\n";
  for (const CurveRow& r : rows) {
    const std::string fields[] = {std::to_string(r.version),
                                  std::to_string(r.step),
                                  fixed(r.minutes, 2),
                                  r.anchor,
                                  std::to_string(r.pairs),
                                  std::to_string(r.visits),
                                  std::to_string(r.max_plies),
                                  std::to_string(r.games),
                                  std::to_string(r.wins),
                                  std::to_string(r.draws),
                                  std::to_string(r.losses),
                                  fixed(r.score, 4),
                                  fixed(r.elo, 1),
                                  fixed(r.lower, 1),
                                  fixed(r.upper, 1),
                                  std::to_string(r.leaves)};
    for (std::size_t i = 0; i < kColumnCount; ++i) out += (i ? "\t" : "") + fields[i];
    out += "\n";
  }
  return out;
}

Result<std::vector<CurveRow>> parse_curve_tsv(std::string_view text, const std::string& path) {
  std::vector<CurveRow> rows;
  std::set<CurveKey> seen;
  auto lines = split(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();  // the final newline
  if (lines.empty())
    return fail(path + ": empty; expected the header line (" + curve_header() + ")");
  const std::size_t columns = lines[0] == header_of(kOldColumnCount) ? kOldColumnCount : kColumnCount;
  if (lines[0] != header_of(columns))
    return fail(path + ":1: not the header of a chessrl curve table; expected " + curve_header() +
                " (move the file away to start a new table)");
  for (std::size_t n = 1; n < lines.size(); ++n) {
    const std::string where = path + ":" + std::to_string(n + 1) + ": ";
    const auto fields = split(lines[n], '\t');
    if (fields.size() != columns)
      return fail(where + "expected " + std::to_string(columns) +
                  " tab-separated fields, found " + std::to_string(fields.size()));
    CurveRow r;
    r.anchor = std::string(fields[3]);
    bool ok = parse_number(fields[0], r.version) && parse_number(fields[1], r.step) &&
              parse_number(fields[2], r.minutes) && parse_number(fields[4], r.pairs) &&
              parse_number(fields[5], r.visits) && parse_number(fields[6], r.max_plies) &&
              parse_number(fields[7], r.games) && parse_number(fields[8], r.wins) &&
              parse_number(fields[9], r.draws) && parse_number(fields[10], r.losses) &&
              parse_number(fields[11], r.score) && parse_number(fields[12], r.elo) &&
              parse_number(fields[13], r.lower) && parse_number(fields[14], r.upper) &&
              (columns == kOldColumnCount || parse_number(fields[15], r.leaves));
    if (!ok) {
      // Name the first field that is wrong.
      for (std::size_t i = 0; i < columns; ++i) {
        if (i == 3) continue;
        double number;
        if (!parse_number(fields[i], number))
          return fail(where + kColumns[i] + " '" + std::string(fields[i]) + "' is not a number");
      }
      return fail(where + "a count is not an integer");
    }
    if (r.anchor.empty()) return fail(where + "no anchor");
    if (r.pairs < 1 || r.visits < 1 || r.max_plies < 1 || r.leaves < 1 || r.wins < 0 ||
        r.draws < 0 || r.losses < 0)
      return fail(where +
                  "pairs, visits, max_plies and leaves must be positive, counts not negative");
    if (r.wins + r.draws + r.losses != r.games)
      return fail(where + "wins + draws + losses is not games");
    if (!seen.insert(r.key()).second)
      return fail(where + "a second row for v" + std::to_string(r.version) + " vs " + r.anchor +
                  " with the same pairs, visits, max_plies and leaves");
    rows.push_back(std::move(r));
  }
  return rows;
}

Result<std::vector<CurveRow>> read_curve_tsv(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::vector<CurveRow>{};
  auto bytes = nn::read_file_bytes(path);
  if (!bytes) return fail(bytes.error());
  return parse_curve_tsv(*bytes, path);
}

Result<void> merge_stats_jsonl(std::string_view text, const std::string& path,
                               StatsByVersion& stats, std::vector<std::string>& notes) {
  const auto lines = split(text, '\n');
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const std::string_view line = lines[n];
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = path + ":" + std::to_string(n + 1) + ": ";
    auto parsed = selfplay::parse_game_stats(line);
    if (!parsed) {
      // The last piece of the split has no newline after it: a line still being written.
      if (n + 1 == lines.size()) {
        notes.push_back(where + "an unfinished last line (still being written?), skipped");
        continue;
      }
      return fail(where + parsed.error());
    }
    selfplay::GameStats& merged = stats[parsed->version];
    merged.version = parsed->version;
    merged.merge(*parsed);
  }
  return {};
}

Result<StatsByVersion> read_selfplay_stats(const std::string& stats_dir, int& files,
                                           std::vector<std::string>& notes) {
  files = 0;
  StatsByVersion stats;
  std::error_code ec;
  if (!fs::is_directory(stats_dir, ec)) return stats;
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(stats_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("selfplay-", 0) == 0 && name.size() > 6 &&
        name.compare(name.size() - 6, 6, ".jsonl") == 0)
      paths.push_back(entry.path().string());
  }
  if (ec) return fail(stats_dir + ": " + ec.message());
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : paths) {
    auto bytes = nn::read_file_bytes(path);
    if (!bytes) return fail(bytes.error());
    if (auto r = merge_stats_jsonl(*bytes, path, stats, notes); !r) return fail(r.error());
    ++files;
  }
  return stats;
}

std::string format_versions_tsv(const StatsByVersion& stats, int top) {
  std::map<std::string, std::uint64_t> totals;
  for (const auto& [version, s] : stats)
    for (const auto& [name, n] : s.terminations) totals[name] += n;
  std::vector<std::pair<std::string, std::uint64_t>> ranked(totals.begin(), totals.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> shown;
  for (const auto& [name, n] : ranked)
    if (static_cast<int>(shown.size()) < top) shown.push_back(name);
  const bool other = ranked.size() > shown.size();

  std::string out = "version\tgames\tdecisive\tmean_plies\tpolicy_entropy\tvalue_mse";
  for (const std::string& name : shown) out += "\t" + name;
  if (other) out += "\tother";
  out += "\n";
  for (const auto& [version, s] : stats) {
    auto share = [&](std::uint64_t n) {
      return s.games ? fixed(static_cast<double>(n) / static_cast<double>(s.games), 3)
                     : std::string("-");
    };
    auto per_position = [&](double mean) {
      return s.positions ? fixed(mean, 4) : std::string("-");
    };
    out += std::to_string(version) + "\t" + std::to_string(s.games) + "\t" + share(s.decisive) +
           "\t" + (s.games ? fixed(s.mean_plies(), 1) : std::string("-")) + "\t" +
           per_position(s.policy_entropy()) + "\t" + per_position(s.value_mse());
    std::uint64_t rest = 0;
    for (const auto& [name, n] : s.terminations)
      if (std::find(shown.begin(), shown.end(), name) == shown.end()) rest += n;
    for (const std::string& name : shown) {
      const auto it = s.terminations.find(name);
      out += "\t" + share(it == s.terminations.end() ? 0 : it->second);
    }
    if (other) out += "\t" + share(rest);
    out += "\n";
  }
  return out;
}

std::string format_table(const std::vector<CurveRow>& rows) {
  std::vector<std::vector<std::string>> cells = {
      {"version", "step", "minutes", "anchor", "games", "+", "=", "-", "score", "elo", "95%"}};
  for (const CurveRow& r : rows) {
    char interval[64];
    std::snprintf(interval, sizeof interval, "[%+.0f, %+.0f]", r.lower, r.upper);
    cells.push_back({"v" + std::to_string(r.version), std::to_string(r.step), fixed(r.minutes, 1),
                     r.anchor, std::to_string(r.games), std::to_string(r.wins),
                     std::to_string(r.draws), std::to_string(r.losses), fixed(r.score, 3),
                     (r.elo >= 0 ? "+" : "") + fixed(r.elo, 0), interval});
  }
  std::vector<std::size_t> width(cells[0].size(), 0);
  for (const auto& line : cells)
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (std::size_t i = 0; i < line.size(); ++i) {
      // Numbers right-aligned, the anchor's name and the interval left-aligned.
      const bool left = i == 3 || i == 10;
      const std::string pad(width[i] - line[i].size(), ' ');
      text += (i ? "  " : "") + (left ? line[i] + pad : pad + line[i]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

std::string gnuplot_script(const PlotOptions& o, const std::vector<CurveRow>& rows) {
  auto clamped = [&](double elo) { return std::clamp(elo, -o.clamp, o.clamp); };
  std::ostringstream s;
  s << "# The learning curve of " << o.run_dir << ", written by `chessrl curve`.\n"
    << "# The data is inline: `gnuplot curve.gp` redraws " << o.png_path << ".\n"
    << "# Elo, lower and upper are clamped to +-" << fixed(o.clamp, 0)
    << " so a perfect or zero score (+-1200) stays on the plot.\n";
  std::vector<std::string> series;  // anchors with rows, in the given order
  for (const std::string& anchor : o.anchors) {
    std::vector<const CurveRow*> mine;
    for (const CurveRow& r : rows)
      if (r.anchor == anchor) mine.push_back(&r);
    if (mine.empty()) continue;
    std::sort(mine.begin(), mine.end(),
              [](const CurveRow* a, const CurveRow* b) { return a->version < b->version; });
    const std::string block = "$anchor" + std::to_string(series.size() + 1);
    s << "# " << anchor << ": step minutes elo lower upper version\n" << block << " << EOD\n";
    for (const CurveRow* r : mine)
      s << r->step << " " << fixed(r->minutes, 2) << " " << fixed(clamped(r->elo), 1) << " "
        << fixed(clamped(r->lower), 1) << " " << fixed(clamped(r->upper), 1) << " " << r->version
        << "\n";
    s << "EOD\n";
    series.push_back(anchor);
  }
  const std::string limit = fixed(o.clamp, 0);
  s << "set terminal " << o.terminal << " size 1100,1000 noenhanced"
    << (o.terminal == "pngcairo" ? " font ',11'" : "") << "\n"
    << "set output " << gnuplot_quote(o.png_path) << "\n"
    << "set multiplot layout 2,1 title "
    << gnuplot_quote("Learning curve of " + o.run_dir + "\n" + std::to_string(o.games_per_point) +
                     " games a point, " + std::to_string(o.visits) +
                     " visits a move; Elo with its 95% interval; " + "points past +-" + limit +
                     " are drawn at the edge")
    << "\n"
    // The same margins in both panels, so their plot areas line up under one key.
    << "set lmargin at screen 0.08\n"
    << "set rmargin at screen 0.82\n"
    << "set grid\n"
    << "set ylabel 'Elo against the anchor'\n"
    // Autoscaled, but never past the clamp: a few +-1200 points do not flatten the rest.
    << "set yrange [-" << limit << "<*:*<" << limit << "]\n"
    << "set offsets graph 0.02, graph 0.02, graph 0.05, graph 0.05\n"
    << "set style data yerrorlines\n";

  // Each series is shifted a little sideways (0.8% of the x span
  // per series), so anchors with the same result do not hide each other.
  auto span = [&](auto x_of) {
    double lo = 0, hi = 0;
    bool any = false;
    for (const CurveRow& r : rows) {
      const double x = x_of(r);
      lo = any ? std::min(lo, x) : x;
      hi = any ? std::max(hi, x) : x;
      any = true;
    }
    return hi > lo ? hi - lo : 1.0;
  };
  auto panel = [&](const std::string& xlabel, int column, double x_span, bool key,
                   const std::string& top_tics) {
    s << "set xlabel " << gnuplot_quote(xlabel) << "\n";
    if (key)
      s << "set key outside right top title 'anchor'\n";
    else
      s << "unset key\n";
    if (top_tics.empty())
      s << "unset x2tics\nset xtics mirror\n";
    else
      s << "set xtics nomirror\nset link x2\nset x2tics (" << top_tics << ")\n";
    s << "plot 0 with lines dashtype 2 linecolor rgb 'gray40' notitle";
    for (std::size_t i = 0; i < series.size(); ++i) {
      const double shift =
          x_span * 0.008 * (static_cast<double>(i) - static_cast<double>(series.size() - 1) / 2);
      s << ", \\\n     $anchor" << i + 1 << " using ($" << column << "+" << shift
        << "):3:4:5 title " << gnuplot_quote(series[i])
        << " linewidth 2 pointtype 7 pointsize 0.8 linecolor " << i + 1;
    }
    s << "\n";
  };
  // The versions on the steps panel's top axis; at most about 12 labels, so they stay legible.
  std::map<std::int64_t, std::int64_t> step_of;
  for (const CurveRow& r : rows) step_of[r.version] = r.step;
  const std::size_t stride = std::max<std::size_t>(1, (step_of.size() + 11) / 12);
  std::string tics;
  std::size_t n = 0;
  for (const auto& [version, step] : step_of)
    if (n++ % stride == 0)
      tics += (tics.empty() ? "" : ", ") + gnuplot_quote("v" + std::to_string(version)) + " " +
              std::to_string(step);
  panel("training steps", 1, span([](const CurveRow& r) { return static_cast<double>(r.step); }),
        true, tics);
  panel("minutes of training", 2, span([](const CurveRow& r) { return r.minutes; }), false, "");
  s << "unset multiplot\n";
  return s.str();
}

Result<std::vector<std::string>> stockfish_specs(const std::string& stockfish,
                                                 const std::optional<std::string>& found) {
  std::vector<std::string> specs;
  if (stockfish == "off") return specs;
  if (stockfish.rfind("uci:", 0) == 0) {
    specs.push_back(stockfish);
    return specs;
  }
  const bool automatic = stockfish == "auto";
  if (automatic && !found) return specs;
  auto rungs = eval::parse_ladder(automatic ? eval::kDefaultLadder : stockfish);
  if (!rungs) return fail("--stockfish: " + rungs.error() + " (or auto, off, uci:...)");
  if (rungs->empty()) return fail("--stockfish '" + stockfish + "': no rungs (give off for none)");
  for (eval::LadderRung& rung : *rungs) {
    if (automatic) rung.program = *found;  // its label stays "stockfish-..."
    specs.push_back(rung.anchor_spec());
  }
  return specs;
}

}  // namespace chessrl::tool::curve
