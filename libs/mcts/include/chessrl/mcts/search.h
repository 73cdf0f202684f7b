// PUCT search (AlphaZero) over one tree, driven in rounds so that many
// searches can share one batched network evaluator:
//
//   gather()  descends from the root up to N times, each time to the leaf with
//             the best PUCT score, with virtual loss on the path so the next
//             descent goes elsewhere; leaves that need the network are
//             prepared as EvalRequests, game-over leaves are backed up at once
//   (caller)  evaluates the requests, usually together with other searches'
//   backup()  writes the network's priors and values into the leaves and backs
//             the values up to the root
//
// run_search() does the loop for a single search. Terminal positions (mate,
// stalemate, the draw rules) are valued exactly, and exact results propagate
// up the tree (a forced mate found in the tree is a proven win at the root).
// Not thread-safe: one thread drives a Search at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "chessrl/chess/position.h"
#include "chessrl/core/result.h"
#include "chessrl/mcts/node.h"
#include "chessrl/mcts/random.h"
#include "chessrl/nn/batch_evaluator.h"

namespace chessrl::mcts {

struct SearchParams {
  // Exploration: c(N) = cpuct + cpuct_factor * ln((N + cpuct_base + 1) / cpuct_base),
  // U = c(N) * prior * sqrt(N) / (1 + n) (AlphaZero's constants by default).
  float cpuct = 1.25f;
  float cpuct_base = 19652.0f;
  float cpuct_factor = 1.0f;
  // First-play urgency: an unvisited child is valued at the parent's value
  // minus reduction * sqrt(sum of the priors of visited children).
  float fpu_reduction = 0.25f;
  float fpu_reduction_root = 0.25f;
  // Each visit in flight counts as a loss of this size until its value
  // arrives. 0: a visit in flight raises only the N of the exploration term,
  // the value stays the completed visits' mean (Leela Chess Zero's way), so a
  // round's descents spread less over the root's moves.
  float virtual_loss = 1.0f;
  // Root noise (request_root_noise): prior = (1 - fraction) prior + fraction Dir(alpha).
  float noise_alpha = 0.3f;
  float noise_fraction = 0.25f;
  // A gather round stops after this many descents hit a leaf already waiting
  // for the network (0: as many as the round's leaf budget).
  int max_collisions = 0;
  // Mates found at expansion: when a node's moves are generated, a move that
  // mates is found at once (its child a proven win for the mover, the node a
  // proven loss for its own mover), so a mate in one is never missed by a
  // search that reaches the position, whatever the visits. Costs one
  // make/unmake per legal move of each expanded node.
  bool mates_at_expansion = true;
  // Draw contempt, in selection only: a proven draw (repetition, fifty moves,
  // stalemate, insufficient material) looks this much worse than 0 to the side
  // choosing it, so a side not losing plays on rather than repeat. Backed-up
  // values stay exact. For self-play (both sides avoid the shuffle); 0 in
  // matches and analysis.
  float draw_contempt = 0.0f;
  // Gumbel root search (Danihelka et al., "Policy improvement by planning
  // with Gumbel", ICLR 2022), for callers that start one (Search::start_gumbel:
  // self-play's --gumbel, chessrl match --gumbel). The root's moves are
  // ranked by Gumbel noise + log prior; the top gumbel_considered get the
  // simulations by Sequential Halving, the move played is the best survivor,
  // and the policy target is softmax(log prior + sigma(completed Q)) with
  // sigma(q) = (gumbel_c_visit + max N) * gumbel_c_scale * q over Q rescaled
  // to [0, 1] (mctx's defaults). Below the root the search is PUCT.
  bool gumbel = false;
  int gumbel_considered = 16;
  float gumbel_c_visit = 50.0f;
  float gumbel_c_scale = 0.1f;

  // An error naming the first parameter out of range.
  Result<void> validate() const;
};

// One root move as the search sees it. Values are for the side to move at the root.
struct ChildInfo {
  chess::Move move;
  std::uint32_t visits = 0;
  float prior = 0;
  double q = 0;                // mean value; the exact one when proven
  float d = 0;                 // mean draw probability
  Proof proof = Proof::kNone;  // kWin: this move wins by force
  int proof_plies = 0;         // plies to the end after this move, when proven
};

struct SearchCounters {
  std::uint64_t playouts = 0;         // descents completed (network or exact value)
  std::uint64_t evaluations = 0;      // leaves sent to the network
  std::uint64_t terminal_visits = 0;  // descents ending at a game-over or proven node
  std::uint64_t collisions = 0;       // descents that hit a leaf already in flight
  std::uint64_t depth_sum = 0;        // summed depth of the playouts' leaves
  int max_depth = 0;
};

class Search {
 public:
  explicit Search(SearchParams params = {});

  // A new, empty tree for `pos` (copied with its history; the draw rules and
  // the network's history planes see it).
  void reset(const chess::Position& pos);
  // Plays m (legal at the root) and keeps the subtree under it: the kept
  // nodes are copied to the spare arena and the old one is freed at once.
  // Nothing may be in flight (call between backup() and the next gather()).
  void advance(chess::Move m);
  const chess::Position& position() const { return pos_; }

  // Mixes Dirichlet noise into the root's priors, now if the root is
  // expanded, else as soon as its evaluation arrives. Once per request.
  void request_root_noise(std::uint64_t seed);

  // Makes the next `simulations` descents a Gumbel root search (the params'
  // gumbel_* constants): the root's moves ranked by Gumbel noise drawn from
  // `seed` (none: no noise, for matches) plus log prior, the top
  // gumbel_considered searched by Sequential Halving. Visits kept by tree
  // reuse do not count in the schedule. Ends at the next reset() or advance().
  void start_gumbel(std::optional<std::uint64_t> seed, std::uint64_t simulations);
  // After a Gumbel search: the move it chose (a forced win first, else of the
  // moves visited most in this search the best by noise + log prior +
  // sigma(Q)), and its policy target over every root move (softmax of log
  // prior + sigma(completed Q)). Move::none() / empty before the root is expanded.
  chess::Move gumbel_move() const;
  std::vector<std::pair<chess::Move, float>> gumbel_policy() const;

  // Descends up to out.size() times to leaves that need the network, and at
  // most max_playouts times in all; returns how many requests of `out` it
  // filled. Descents ending in a game-over or proven position are backed up
  // at once (they count as playouts). Call backup() with the filled requests,
  // evaluated, before the next gather(). Returns 0 when the root's game is over.
  int gather(std::span<nn::EvalRequest> out, std::uint64_t max_playouts);
  // The evaluated requests of the last gather(), in order.
  void backup(std::span<const nn::EvalRequest> results);
  int in_flight() const { return int(pending_.size()); }

  // The root.
  const Node& root() const { return *root_; }
  std::uint32_t root_visits() const { return root_->visits; }
  bool game_over() const { return root_->state == NodeState::kTerminal; }
  int num_root_moves() const { return root_->num_edges; }
  bool root_expanded() const { return root_->state == NodeState::kExpanded; }
  // Expected result for the side to move (exact when proven).
  nn::Wdl root_wdl() const;
  std::vector<ChildInfo> children() const;
  // A forced win (shortest first), else the most visited move (then the
  // higher value), forced losses last. Move::none() before the root is expanded.
  chess::Move best_move() const;
  // Best moves from the root down, following best_move()'s rule.
  std::vector<chess::Move> principal_variation(int max_length = 64) const;

  const SearchCounters& counters() const { return counters_; }
  const SearchParams& params() const { return params_; }
  std::size_t memory_bytes() const;

 private:
  Edge* select(Node& node) const;
  // Creates the node's edges and prepares `request`, or settles a game-over
  // node. Returns whether the network must evaluate it.
  bool expand(Node& node, nn::EvalRequest& request);
  // The index of a legal move of the position that mates, or -1.
  int find_mate(const chess::MoveList& moves);
  void back_up_exact(Node& node);
  void propagate_proof(Node* node);
  void apply_noise();
  // Gumbel: the root edge for the next descent; the per-edge scores.
  Edge* select_gumbel_root();
  void init_gumbel();
  // sigma(completed Q) of each root edge (size num_edges).
  std::vector<double> gumbel_sigma() const;
  double gumbel_new_visits(int edge, bool with_in_flight) const;

  struct GumbelState {
    std::optional<std::uint64_t> seed;
    std::uint64_t simulations = 0;
    bool ready = false;                  // drawn once the root is expanded
    std::vector<float> noise;            // per root edge
    std::vector<std::uint32_t> base;     // visits each root edge had at the start
    std::vector<std::uint32_t> sequence; // the new visits the k-th descent's edge has
    std::uint64_t descents = 0;          // root descents so far
  };

  SearchParams params_;
  NodeArena arenas_[2];
  int arena_ = 0;
  Node* root_ = nullptr;
  chess::Position pos_;
  std::vector<Node*> pending_;   // leaves of the last gather, in request order
  std::vector<Node*> collided_;  // leaves whose extra virtual loss backup() removes
  std::optional<std::uint64_t> noise_seed_;
  std::optional<GumbelState> gumbel_;
  SearchCounters counters_;
};

// Limits for run_search; the first reached ends the search. At least one
// visit beyond the root's is always made when the root has moves.
struct SearchLimits {
  std::uint64_t visits = 0;    // root visits (those kept from tree reuse count); 0: none
  std::uint64_t playouts = 0;  // new playouts in this call; 0: none
  std::chrono::steady_clock::duration time =
      std::chrono::steady_clock::duration::zero();  // 0: none
  const std::atomic<bool>* stop = nullptr;          // set from another thread to stop
  int leaves_per_round = 16;  // leaves evaluated together (virtual loss batch)
};

struct SearchProgress {
  std::uint64_t playouts = 0;  // in this call
  std::chrono::steady_clock::duration elapsed{};
};

// Runs gather/evaluate/backup rounds until a limit is reached. `on_round` is
// called after every round (for UCI info lines); it may be empty.
SearchProgress run_search(Search& search, nn::BatchEvaluator& evaluator, const SearchLimits& limits,
                          const std::function<void(const SearchProgress&)>& on_round = {});

}  // namespace chessrl::mcts
