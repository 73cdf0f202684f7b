// The settings `chessrl local` (make run) starts the loop with on a laptop
// CPU, shared with `chessrl doctor`'s games/hour estimate so the estimate is
// for what make run actually plays.
#pragma once

namespace chessrl::tool::local_defaults {

inline constexpr const char* kNet = "4x32";          // blocks x filters of the default network
inline constexpr int kFullVisits = 64;               // visits of a recorded (full) search
inline constexpr int kReducedVisits = 16;            // visits of the other moves (playout cap)
inline constexpr float kFullFraction = 0.25f;        // share of full searches
inline constexpr int kConcurrentGames = 32;          // games per self-play process
// Learning settings measured in docs/learning.md (runs 1-5): games cut at 200
// plies and won there by the side 3 pawns ahead, moves sampled at temperature
// 0.5 after the first 30 plies (so self-play does not shuffle into
// repetitions), and value targets 30% the search's root value, 70% the result.
inline constexpr int kMaxPlies = 200;
inline constexpr int kAdjudicateMaterial = 3;
inline constexpr float kFinalTemperature = 0.5f;
inline constexpr double kValueQRatio = 0.3;
// Learning runs A and B (docs/learning.md): half the self-play games cut at 60
// plies and won there by the side a pawn ahead (a dense material signal), and
// a proven draw 0.2 worse than 0 to the side choosing it in self-play's
// selection (no repetition collapse: 1% repetitions against run 5's 62%).
inline constexpr float kShortGames = 0.5f;
inline constexpr float kDrawContempt = 0.2f;
inline constexpr int kEvalVisits = 32;               // evaluator: visits per move
inline constexpr int kEvalMaxPlies = 300;            // evaluator: a match game's move limit (a draw)
inline constexpr int kBatchSize = 256;               // trainer batch
inline constexpr int kPublishEvery = 200;            // trainer steps between model versions

}  // namespace chessrl::tool::local_defaults
