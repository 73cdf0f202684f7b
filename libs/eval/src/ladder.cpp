#include "chessrl/eval/ladder.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <optional>

#include "chessrl/core/subprocess.h"

namespace chessrl::eval {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// A whole decimal number in [low, high], else nullopt.
std::optional<int> number_in(const std::string& text, int low, int high) {
  int value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < low || value > high)
    return std::nullopt;
  return value;
}

// Only [a-zA-Z0-9_.-], as anchor labels are.
std::string label_of(const std::string& program, int skill, int depth) {
  std::string base = std::filesystem::path(program).filename().string();
  std::string clean;
  for (const char c : base)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')
      clean += c;
  if (clean.empty()) clean = "engine";
  std::string label = clean + "-skill" + std::to_string(skill);
  if (depth != skill + 1) label += "-depth" + std::to_string(depth);
  return label;
}

}  // namespace

std::string LadderRung::anchor_spec() const {
  return "uci:" + program + ";Skill Level=" + std::to_string(skill) +
         ";depth=" + std::to_string(depth) + ";name=" + label;
}

Result<std::vector<LadderRung>> parse_ladder(const std::string& text) {
  std::vector<LadderRung> rungs;
  const std::string all = trim(text);
  if (all.empty() || all == "off") return rungs;
  const std::string expected = ": expected PROGRAM:SKILL:DEPTH, e.g. stockfish:0:1";
  std::size_t start = 0;
  for (int n = 1; start <= all.size(); ++n) {
    const std::size_t comma = std::min(all.find(',', start), all.size());
    const std::string rung = trim(all.substr(start, comma - start));
    start = comma + 1;
    const std::string where = "ladder '" + text + "', rung " + std::to_string(n);
    if (rung.empty()) return fail(where + " is empty" + expected);
    // PROGRAM may hold ':' (a path); SKILL and DEPTH are the last two fields.
    const std::size_t second = rung.rfind(':');
    const std::size_t first = second == std::string::npos || second == 0
                                  ? std::string::npos
                                  : rung.rfind(':', second - 1);
    if (first == std::string::npos)
      return fail(where + " '" + rung + "' has fewer than three fields" + expected);
    const std::string program = trim(rung.substr(0, first));
    const std::string skill_text = trim(rung.substr(first + 1, second - first - 1));
    const std::string depth_text = trim(rung.substr(second + 1));
    if (program.empty()) return fail(where + " '" + rung + "' has no program" + expected);
    if (program.find(';') != std::string::npos)
      return fail(where + " '" + rung + "': the program may not hold ';'");
    const auto skill = number_in(skill_text, 0, kLadderMaxSkill);
    if (!skill)
      return fail(where + " '" + rung + "': SKILL '" + skill_text + "' is not a whole number 0-" +
                  std::to_string(kLadderMaxSkill) + " (Stockfish's Skill Level)");
    const auto depth = number_in(depth_text, 1, kLadderMaxDepth);
    if (!depth)
      return fail(where + " '" + rung + "': DEPTH '" + depth_text + "' is not a whole number 1-" +
                  std::to_string(kLadderMaxDepth));
    LadderRung r{program, *skill, *depth, label_of(program, *skill, *depth)};
    if (rung_index(rungs, r.label) != rungs.size())
      return fail(where + " '" + rung + "': another rung has the label '" + r.label + "'");
    rungs.push_back(std::move(r));
  }
  return rungs;
}

Result<std::vector<LadderRung>> resolve_ladder(std::vector<LadderRung> rungs) {
  for (LadderRung& r : rungs) {
    auto found = find_program(r.program);
    if (!found) return fail("no " + r.program + " on PATH or in /usr/games");
    r.program = *found;
  }
  return rungs;
}

std::size_t next_rung(std::size_t current, std::size_t count, double score) {
  if (score >= kLadderStepScore && current + 1 < count) return current + 1;
  return current;
}

std::size_t rung_index(const std::vector<LadderRung>& rungs, const std::string& label) {
  for (std::size_t i = 0; i < rungs.size(); ++i)
    if (rungs[i].label == label) return i;
  return rungs.size();
}

}  // namespace chessrl::eval
