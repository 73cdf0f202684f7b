// The Stockfish ladder: a list of rungs, each a UCI engine at a fixed Skill
// Level and search depth, climbed in order. The evaluator plays the rung in
// play and moves up one once a version scores at least kLadderStepScore
// against it; `chessrl curve` plays every rung as an anchor. Text form:
//   RUNG[,RUNG]...   RUNG = PROGRAM:SKILL:DEPTH
// e.g. "stockfish:0:1,stockfish:1:2" (kDefaultLadder): Skill Level 0 at depth
// 1, then Skill Level 1 at depth 2. PROGRAM is a name (looked up on PATH and
// in /usr/games) or a path; SKILL 0-20 (Stockfish's Skill Level); DEPTH
// 1-30. A rung's label, its anchor name in metrics and files, is the
// program's base name, "-skill" and SKILL ("stockfish-skill0"), with
// "-depth" and DEPTH added when DEPTH is not SKILL + 1 (Stockfish's Skill
// Level N picks its move from a depth N + 1 search). Plain data and free
// functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "chessrl/core/result.h"

namespace chessrl::eval {

// Stockfish 15.1's two weakest levels as the issue calibrates them: Skill
// Level 0 at depth 1 (about 1320 on Stockfish's scale), then Skill Level 1
// at depth 2 (about 1470).
inline constexpr const char* kDefaultLadder = "stockfish:0:1,stockfish:1:2";
// A version that scores at least this against the rung in play moves the
// ladder up one rung.
inline constexpr double kLadderStepScore = 0.5;
inline constexpr int kLadderMaxSkill = 20;
inline constexpr int kLadderMaxDepth = 30;

struct LadderRung {
  std::string program;  // as given, or the path resolve_ladder found
  int skill = 0;
  int depth = 1;
  std::string label;  // "stockfish-skill0"; fixed by parse_ladder from the name as given
  // The anchor spec parse_anchor reads:
  // "uci:PROGRAM;Skill Level=S;depth=D;name=LABEL".
  std::string anchor_spec() const;
};

// The rungs of `text`; none for "" or "off". Errors quote the text and name
// the rung and the part that is wrong (a missing field, SKILL or DEPTH out of
// range or not a number, two rungs with one label).
Result<std::vector<LadderRung>> parse_ladder(const std::string& text);

// Every rung's program looked up (chessrl::find_program: PATH, then
// /usr/games) and replaced by the path found; the error names the first
// program not found.
Result<std::vector<LadderRung>> resolve_ladder(std::vector<LadderRung> rungs);

// The rung in play after a version scored `score` against rung `current` of
// `count`: one up when score >= kLadderStepScore, never past the top; the
// same rung otherwise. Precondition: current < count.
std::size_t next_rung(std::size_t current, std::size_t count, double score);

// The index of the rung labelled `label`; `count` (none) when absent.
std::size_t rung_index(const std::vector<LadderRung>& rungs, const std::string& label);

}  // namespace chessrl::eval
