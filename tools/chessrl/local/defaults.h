// What `chessrl local` (make run) sets because it runs on one laptop-class
// machine, shared with `chessrl doctor`'s games/hour estimate so the estimate
// is for what make run plays. The learning settings are not here: they are
// the binaries' own defaults (SelfPlayConfig, chessrl-trainer's and
// chessrl-evaluator's options), which the chart uses too; so is the replay
// window (chessrl-replay's --window-positions).
#pragma once

namespace chessrl::tool::local_defaults {

inline constexpr int kConcurrentGames = 32;  // games per self-play process
// Self-play's niceness under make run: the trainer and evaluator (niceness 0)
// get a core when they want one, self-play every cycle they leave.
inline constexpr int kSelfplayNice = 10;

}  // namespace chessrl::tool::local_defaults
