#include "chessrl/mcts/search.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/rules.h"

namespace chessrl::mcts {

using chess::Move;

Result<void> SearchParams::validate() const {
  auto bad = [](const char* name, const std::string& why) {
    return fail(std::string("search parameter ") + name + " " + why);
  };
  if (!(cpuct > 0) || !std::isfinite(cpuct)) return bad("cpuct", "must be > 0");
  if (!(cpuct_base > 0) || !std::isfinite(cpuct_base)) return bad("cpuct_base", "must be > 0");
  if (!(cpuct_factor >= 0) || !std::isfinite(cpuct_factor))
    return bad("cpuct_factor", "must be >= 0");
  if (!(fpu_reduction >= 0 && fpu_reduction <= 2)) return bad("fpu_reduction", "must be in [0, 2]");
  if (!(fpu_reduction_root >= 0 && fpu_reduction_root <= 2))
    return bad("fpu_reduction_root", "must be in [0, 2]");
  if (!(virtual_loss >= 0 && virtual_loss <= 10)) return bad("virtual_loss", "must be in [0, 10]");
  if (!(noise_alpha > 0) || !std::isfinite(noise_alpha)) return bad("noise_alpha", "must be > 0");
  if (!(noise_fraction >= 0 && noise_fraction <= 1))
    return bad("noise_fraction", "must be in [0, 1]");
  if (max_collisions < 0) return bad("max_collisions", "must be >= 0");
  if (!(draw_contempt >= 0 && draw_contempt <= 1)) return bad("draw_contempt", "must be in [0, 1]");
  if (gumbel_considered < 1 || gumbel_considered > 256)
    return bad("gumbel_considered", "must be in [1, 256]");
  if (!(gumbel_c_visit >= 0 && gumbel_c_visit <= 1e6f))
    return bad("gumbel_c_visit", "must be in [0, 1e6]");
  if (!(gumbel_c_scale > 0 && gumbel_c_scale <= 100))
    return bad("gumbel_c_scale", "must be in (0, 100]");
  return {};
}

Search::Search(SearchParams params) : params_(params) { reset(chess::Position()); }

void Search::reset(const chess::Position& pos) {
  pending_.clear();  // anything in flight is abandoned with the tree
  collided_.clear();
  pos_ = pos;
  arenas_[0].reset();
  arenas_[1].reset();
  arena_ = 0;
  root_ = arenas_[arena_].make<Node>();
  noise_seed_.reset();
  gumbel_.reset();
  counters_ = {};
}

void Search::advance(Move m) {
  assert(pending_.empty() && collided_.empty());
  Node* child = nullptr;
  for (int i = 0; i < root_->num_edges; ++i)
    if (root_->edges[i].move == m) child = root_->edges[i].node;
  assert(root_->state != NodeState::kExpanded || chess::is_legal(pos_, m));
  pos_.make_move(m);
  NodeArena& spare = arenas_[1 - arena_];
  spare.reset();
  root_ = child ? copy_subtree(*child, spare) : spare.make<Node>();
  arenas_[arena_].reset();
  arena_ = 1 - arena_;
  noise_seed_.reset();
  gumbel_.reset();
}

void Search::request_root_noise(std::uint64_t seed) {
  noise_seed_ = seed;
  if (root_->state == NodeState::kExpanded) apply_noise();
}

void Search::apply_noise() {
  if (!noise_seed_) return;
  Rng rng(*noise_seed_);
  noise_seed_.reset();
  const int n = root_->num_edges;
  if (n < 2 || params_.noise_fraction <= 0) return;
  float noise[chess::MoveList::kCapacity];
  rng.dirichlet(params_.noise_alpha, std::span<float>(noise, std::size_t(n)));
  const float f = params_.noise_fraction;
  for (int i = 0; i < n; ++i)
    root_->edges[i].prior = (1 - f) * root_->edges[i].prior + f * noise[i];
}

void Search::start_gumbel(std::optional<std::uint64_t> seed, std::uint64_t simulations) {
  gumbel_.emplace();
  gumbel_->seed = seed;
  gumbel_->simulations = simulations;
}

namespace {

// The root visits of the k-th descent's edge under Sequential Halving (mctx's
// get_sequence_of_considered_visits): `considered` moves share the first
// phase, each phase gives every survivor n / (log2(considered) x survivors)
// visits (at least 1) and halves them, down to 2.
std::vector<std::uint32_t> halving_sequence(int considered, std::uint64_t simulations) {
  std::vector<std::uint32_t> sequence;
  sequence.reserve(std::size_t(simulations));
  if (considered <= 1) {
    for (std::uint64_t k = 0; k < simulations; ++k) sequence.push_back(std::uint32_t(k));
    return sequence;
  }
  const double log2max = std::ceil(std::log2(double(considered)));
  std::vector<std::uint32_t> visits(std::size_t(considered), 0);
  int survivors = considered;
  while (sequence.size() < simulations) {
    const auto extra = std::max<std::uint64_t>(
        1, std::uint64_t(double(simulations) / (log2max * double(survivors))));
    for (std::uint64_t r = 0; r < extra; ++r) {
      sequence.insert(sequence.end(), visits.begin(), visits.begin() + survivors);
      for (int i = 0; i < survivors; ++i) ++visits[std::size_t(i)];
    }
    survivors = std::max(2, survivors / 2);
  }
  sequence.resize(std::size_t(simulations));
  return sequence;
}

double log_prior(float prior) { return std::log(std::max(double(prior), 1e-20)); }

}  // namespace

void Search::init_gumbel() {
  GumbelState& g = *gumbel_;
  const int n = root_->num_edges;
  g.noise.assign(std::size_t(n), 0.0f);
  if (g.seed) {
    Rng rng(*g.seed);
    for (float& x : g.noise) {
      const double u = std::max(rng.uniform(), 1e-300);
      x = float(-std::log(-std::log(u)));
    }
  }
  g.base.assign(std::size_t(n), 0);
  for (int i = 0; i < n; ++i)
    if (const Node* c = root_->edges[i].node) g.base[std::size_t(i)] = c->visits;
  g.sequence = halving_sequence(std::min(params_.gumbel_considered, n), g.simulations);
  g.ready = true;
}

double Search::gumbel_new_visits(int edge, bool with_in_flight) const {
  const Node* c = root_->edges[edge].node;
  if (!c) return 0;
  const double visits = double(c->visits) + (with_in_flight ? double(c->in_flight) : 0.0);
  return visits - double(gumbel_->base[std::size_t(edge)]);
}

// sigma(completed Q) for each root edge, for the side to move at the root: a
// visited move's mean value (exact when proven), an unvisited one the mixed
// value (the root's mean and the visited moves' prior-weighted mean, mctx's
// v_mix, the root's mean standing in for the network's raw value), rescaled
// to [0, 1] over the root's moves and scaled by (c_visit + max N) x c_scale.
std::vector<double> Search::gumbel_sigma() const {
  const int n = root_->num_edges;
  std::vector<double> q(std::size_t(n), 0.0);
  std::vector<bool> visited(std::size_t(n), false);
  double sum_visits = 0, max_visits = 0, prior_visited = 0, prior_q = 0;
  for (int i = 0; i < n; ++i) {
    const Node* c = root_->edges[i].node;
    if (!c || (c->visits == 0 && !c->proven())) continue;
    visited[std::size_t(i)] = true;
    q[std::size_t(i)] = c->proven() ? c->proven_value() : c->q;
    sum_visits += c->visits;
    max_visits = std::max(max_visits, double(c->visits));
    prior_visited += root_->edges[i].prior;
    prior_q += root_->edges[i].prior * q[std::size_t(i)];
  }
  const double root_value = -root_->q;
  const double mixed = prior_visited > 0 ? (root_value + sum_visits * prior_q / prior_visited) /
                                               (1 + sum_visits)
                                         : root_value;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int i = 0; i < n; ++i) {
    if (!visited[std::size_t(i)]) q[std::size_t(i)] = mixed;
    lo = std::min(lo, q[std::size_t(i)]);
    hi = std::max(hi, q[std::size_t(i)]);
  }
  const double scale = (params_.gumbel_c_visit + max_visits) * params_.gumbel_c_scale;
  for (double& x : q) x = scale * (x - lo) / std::max(hi - lo, 1e-8);
  return q;
}

// The edge whose new visits equal the schedule's for this descent, best by
// noise + log prior + sigma(Q); PUCT when the schedule has none to offer
// (descents beyond the budget, or every such edge already in flight).
Edge* Search::select_gumbel_root() {
  GumbelState& g = *gumbel_;
  if (!g.ready) init_gumbel();
  const std::uint64_t k = g.descents++;
  if (g.sequence.empty()) return select(*root_);
  const double considered = g.sequence[std::min<std::size_t>(k, g.sequence.size() - 1)];
  const std::vector<double> sigma = gumbel_sigma();
  Edge* best = nullptr;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < root_->num_edges; ++i) {
    if (gumbel_new_visits(i, true) != considered) continue;
    const double score = g.noise[std::size_t(i)] + log_prior(root_->edges[i].prior) +
                         sigma[std::size_t(i)];
    if (score > best_score) {
      best_score = score;
      best = &root_->edges[i];
    }
  }
  return best ? best : select(*root_);
}

chess::Move Search::gumbel_move() const {
  if (root_->state != NodeState::kExpanded || root_->num_edges == 0) return Move::none();
  for (int i = 0; i < root_->num_edges; ++i)
    if (const Node* c = root_->edges[i].node; c && c->proof == Proof::kWin) return best_move();
  if (!gumbel_ || !gumbel_->ready) return best_move();
  const std::vector<double> sigma = gumbel_sigma();
  double most = 0;
  for (int i = 0; i < root_->num_edges; ++i) most = std::max(most, gumbel_new_visits(i, false));
  const Edge* best = nullptr;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < root_->num_edges; ++i) {
    if (gumbel_new_visits(i, false) != most) continue;
    const double score = gumbel_->noise[std::size_t(i)] +
                         log_prior(root_->edges[i].prior) + sigma[std::size_t(i)];
    if (score > best_score) {
      best_score = score;
      best = &root_->edges[i];
    }
  }
  return best ? best->move : best_move();
}

std::vector<std::pair<chess::Move, float>> Search::gumbel_policy() const {
  std::vector<std::pair<chess::Move, float>> out;
  if (root_->state != NodeState::kExpanded || root_->num_edges == 0) return out;
  const std::vector<double> sigma = gumbel_sigma();
  std::vector<double> logits(std::size_t(root_->num_edges));
  double top = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < root_->num_edges; ++i) {
    logits[std::size_t(i)] = log_prior(root_->edges[i].prior) + sigma[std::size_t(i)];
    top = std::max(top, logits[std::size_t(i)]);
  }
  double total = 0;
  for (double& x : logits) total += (x = std::exp(x - top));
  out.reserve(logits.size());
  for (int i = 0; i < root_->num_edges; ++i)
    out.push_back({root_->edges[i].move, float(logits[std::size_t(i)] / total)});
  return out;
}

std::size_t Search::memory_bytes() const {
  return arenas_[0].bytes_reserved() + arenas_[1].bytes_reserved();
}

// The child with the highest PUCT score, counting visits in flight as losses.
Edge* Search::select(Node& node) const {
  const bool is_root = &node == root_;
  const double parent_n = double(node.visits + node.in_flight);
  const double cpuct =
      params_.cpuct +
      params_.cpuct_factor * std::log((parent_n + params_.cpuct_base + 1) / params_.cpuct_base);
  // Visits of the children: the parent's own evaluation is not one of them.
  const double puct_mult = cpuct * std::sqrt(std::max(parent_n - 1, 1.0));
  double visited_policy = 0;
  for (int i = 0; i < node.num_edges; ++i) {
    const Node* c = node.edges[i].node;
    if (c && c->visits > 0) visited_policy += node.edges[i].prior;
  }
  const double reduction = is_root ? params_.fpu_reduction_root : params_.fpu_reduction;
  const double fpu = -node.q - reduction * std::sqrt(visited_policy);
  const double vl = params_.virtual_loss;

  Edge* best = &node.edges[0];
  double best_score = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < node.num_edges; ++i) {
    Edge& e = node.edges[i];
    const Node* c = e.node;
    double q = fpu, n = 0;
    if (c) {
      const double visits = c->visits, flight = c->in_flight;
      n = visits + flight;
      if (c->proven())
        q = c->proof == Proof::kDraw ? -params_.draw_contempt : c->proven_value();
      else if (vl == 0)
        q = visits > 0 ? c->q : fpu;
      else if (n > 0)
        q = (c->q * visits - vl * flight) / n;
    }
    const double score = q + puct_mult * e.prior / (1 + n);
    if (score > best_score) {
      best_score = score;
      best = &e;
    }
  }
  return best;
}

int Search::find_mate(const chess::MoveList& moves) {
  for (int i = 0; i < moves.size(); ++i) {
    pos_.make_move(moves[i]);
    const bool mate = pos_.in_check() && chess::count_legal(pos_) == 0;
    pos_.unmake_move();
    if (mate) return i;
  }
  return -1;
}

bool Search::expand(Node& node, nn::EvalRequest& request) {
  chess::MoveList moves;
  chess::generate_legal(pos_, moves);
  Proof proof = Proof::kNone;
  if (moves.empty())
    proof = pos_.in_check() ? Proof::kWin : Proof::kDraw;  // the mover mated or stalemated
  else if (chess::insufficient_material(pos_) || pos_.halfmove_clock() >= 100 ||
           pos_.repetition_count() >= 3)
    proof = Proof::kDraw;
  if (proof != Proof::kNone) {
    node.state = NodeState::kTerminal;
    node.proof = proof;
    node.proof_plies = 0;
    return false;
  }
  node.num_edges = std::uint16_t(moves.size());
  node.edges = arenas_[arena_].make<Edge>(std::size_t(moves.size()));
  for (int i = 0; i < moves.size(); ++i) node.edges[i].move = moves[i];
  if (params_.mates_at_expansion) {
    if (const int mate = find_mate(moves); mate >= 0) {
      // Settled without the network: the side to move mates. The other moves
      // keep uniform priors (they are never searched while the mate stands).
      Node* mated = arenas_[arena_].make<Node>();
      mated->parent = &node;
      mated->state = NodeState::kTerminal;
      mated->proof = Proof::kWin;
      node.edges[mate].node = mated;
      for (int i = 0; i < moves.size(); ++i) node.edges[i].prior = 1.0f / float(moves.size());
      node.state = NodeState::kExpanded;
      node.proof = Proof::kLoss;
      node.proof_plies = 1;
      return false;
    }
  }
  nn::prepare(request, pos_, std::span<const Move>(moves.begin(), moves.end()));
  node.state = NodeState::kPending;
  return true;
}

namespace {

void add_in_flight(Node* node, int delta) {
  for (; node; node = node->parent) node->in_flight = std::uint32_t(int(node->in_flight) + delta);
}

// Adds one completed visit of value v (for node's mover) and draw probability
// d to node and its ancestors, flipping the point of view at each level.
void back_up(Node* node, double v, float d, bool was_in_flight) {
  for (; node; node = node->parent) {
    if (was_in_flight) --node->in_flight;
    ++node->visits;
    node->q += (v - node->q) / node->visits;
    node->d += (d - node->d) / float(node->visits);
    v = -v;
  }
}

}  // namespace

void Search::back_up_exact(Node& node) {
  back_up(&node, node.proven_value(), node.proof == Proof::kDraw ? 1.0f : 0.0f, false);
}

// A node just became proven: its parent may now be proven too, and so on up.
// The parent's children moved for its opponent: one winning child makes the
// parent a loss; all children losses make it a win; all proven and the best a
// draw makes it a draw.
void Search::propagate_proof(Node* node) {
  for (Node* parent = node->parent; parent && !parent->proven(); parent = parent->parent) {
    int win_plies = std::numeric_limits<int>::max(), loss_plies = 0, draw_plies = -1;
    bool all_proven = true;
    for (int i = 0; i < parent->num_edges; ++i) {
      const Node* c = parent->edges[i].node;
      if (!c || !c->proven()) {
        all_proven = false;
        continue;
      }
      if (c->proof == Proof::kWin) win_plies = std::min(win_plies, int(c->proof_plies));
      if (c->proof == Proof::kLoss) loss_plies = std::max(loss_plies, int(c->proof_plies));
      if (c->proof == Proof::kDraw) draw_plies = std::max(draw_plies, int(c->proof_plies));
    }
    if (win_plies != std::numeric_limits<int>::max()) {
      parent->proof = Proof::kLoss;
      parent->proof_plies = std::uint16_t(std::min(win_plies + 1, 65535));
    } else if (all_proven && draw_plies >= 0) {
      parent->proof = Proof::kDraw;
      parent->proof_plies = std::uint16_t(std::min(draw_plies + 1, 65535));
    } else if (all_proven) {
      parent->proof = Proof::kWin;
      parent->proof_plies = std::uint16_t(std::min(loss_plies + 1, 65535));
    } else {
      return;
    }
  }
}

int Search::gather(std::span<nn::EvalRequest> out, std::uint64_t max_playouts) {
  assert(pending_.empty() && collided_.empty());
  if (root_->state == NodeState::kTerminal) return 0;
  const int max_leaves = int(out.size());
  const int max_collisions = params_.max_collisions > 0 ? params_.max_collisions : max_leaves;
  // Exact backups cost no network time; the cap only bounds a round in a
  // fully proven tree.
  const int max_exact = 4 * max_leaves + 16;
  int leaves = 0, collisions = 0, exact = 0;
  std::uint64_t playouts = 0;
  while (leaves < max_leaves && playouts < max_playouts) {
    Node* node = root_;
    int depth = 0;
    while (node->state == NodeState::kExpanded && (node == root_ || !node->proven())) {
      Edge* e = node == root_ && gumbel_ ? select_gumbel_root() : select(*node);
      if (!e->node) {
        e->node = arenas_[arena_].make<Node>();
        e->node->parent = node;
      }
      pos_.make_move(e->move);
      node = e->node;
      ++depth;
    }

    bool stop = false;
    if (node->state == NodeState::kNew && expand(*node, out[std::size_t(leaves)])) {
      add_in_flight(node, +1);
      pending_.push_back(node);
      ++leaves;
      ++playouts;
      counters_.depth_sum += std::uint64_t(depth);
      counters_.max_depth = std::max(counters_.max_depth, depth);
    } else if (node->state == NodeState::kPending) {
      add_in_flight(node, +1);
      collided_.push_back(node);
      ++counters_.collisions;
      stop = ++collisions >= max_collisions;
    } else {
      // Game over here (just found, or known), a mate found at expansion, or
      // proven by search. A node proven on its first visit tells its parent.
      if (node->proven() && node->visits == 0) propagate_proof(node);
      back_up_exact(*node);
      ++playouts;
      ++counters_.playouts;
      ++counters_.terminal_visits;
      counters_.depth_sum += std::uint64_t(depth);
      counters_.max_depth = std::max(counters_.max_depth, depth);
      stop = ++exact >= max_exact || node == root_;
    }
    for (int i = 0; i < depth; ++i) pos_.unmake_move();
    if (stop) break;
  }
  counters_.evaluations += std::uint64_t(leaves);
  return leaves;
}

void Search::backup(std::span<const nn::EvalRequest> results) {
  assert(results.size() == pending_.size());
  for (Node* node : collided_) add_in_flight(node, -1);
  collided_.clear();
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    Node* node = pending_[i];
    const nn::EvalRequest& r = results[i];
    assert(r.num_moves == node->num_edges);
    for (int k = 0; k < node->num_edges; ++k) node->edges[k].prior = r.priors[std::size_t(k)];
    node->state = NodeState::kExpanded;
    back_up(node, double(r.wdl.loss) - double(r.wdl.win), r.wdl.draw, true);
    if (node == root_) apply_noise();
  }
  counters_.playouts += pending_.size();
  pending_.clear();
}

nn::Wdl Search::root_wdl() const {
  const Node& r = *root_;
  if (r.proven()) {
    if (r.proof == Proof::kDraw) return {0, 1, 0};
    return r.proof == Proof::kWin ? nn::Wdl{0, 0, 1} : nn::Wdl{1, 0, 0};
  }
  const double v = -r.q, d = r.d;
  const auto w = float(std::clamp((1 + v - d) / 2, 0.0, 1.0));
  const auto l = float(std::clamp((1 - v - d) / 2, 0.0, 1.0));
  return {w, float(d), l};
}

namespace {

ChildInfo child_info(const Edge& e) {
  ChildInfo info;
  info.move = e.move;
  info.prior = e.prior;
  if (const Node* c = e.node) {
    info.visits = c->visits;
    info.q = c->proven() ? c->proven_value() : c->q;
    info.d = c->proof == Proof::kDraw ? 1.0f : c->d;
    info.proof = c->proof;
    info.proof_plies = c->proof_plies;
  }
  return info;
}

// best_move()'s order: forced wins (shortest first), then by visits, value
// and prior, forced losses last (longest first).
bool better(const ChildInfo& a, const ChildInfo& b) {
  auto rank = [](const ChildInfo& c) {
    return c.proof == Proof::kWin ? 2 : c.proof == Proof::kLoss ? 0 : 1;
  };
  if (rank(a) != rank(b)) return rank(a) > rank(b);
  if (a.proof == Proof::kWin) return a.proof_plies < b.proof_plies;
  if (a.proof == Proof::kLoss) return a.proof_plies > b.proof_plies;
  if (a.visits != b.visits) return a.visits > b.visits;
  if (a.q != b.q) return a.q > b.q;
  return a.prior > b.prior;
}

const Edge* best_edge(const Node& node) {
  if (node.state != NodeState::kExpanded || node.num_edges == 0) return nullptr;
  const Edge* best = &node.edges[0];
  ChildInfo best_info = child_info(*best);
  for (int i = 1; i < node.num_edges; ++i) {
    ChildInfo info = child_info(node.edges[i]);
    if (better(info, best_info)) {
      best = &node.edges[i];
      best_info = info;
    }
  }
  return best;
}

}  // namespace

std::vector<ChildInfo> Search::children() const {
  std::vector<ChildInfo> out;
  if (root_->state != NodeState::kExpanded) return out;
  out.reserve(root_->num_edges);
  for (int i = 0; i < root_->num_edges; ++i) out.push_back(child_info(root_->edges[i]));
  return out;
}

Move Search::best_move() const {
  const Edge* e = best_edge(*root_);
  return e ? e->move : Move::none();
}

std::vector<Move> Search::principal_variation(int max_length) const {
  std::vector<Move> pv;
  const Node* node = root_;
  while (node && int(pv.size()) < max_length) {
    const Edge* e = best_edge(*node);
    if (!e || !e->node || e->node->visits == 0) break;
    pv.push_back(e->move);
    node = e->node;
  }
  if (pv.empty()) {
    if (Move m = best_move(); m != Move::none()) pv.push_back(m);
  }
  return pv;
}

SearchProgress run_search(Search& search, nn::BatchEvaluator& evaluator, const SearchLimits& limits,
                          const std::function<void(const SearchProgress&)>& on_round) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  SearchProgress progress;
  std::vector<nn::EvalRequest> requests(std::size_t(std::max(1, limits.leaves_per_round)));
  for (;;) {
    std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();
    if (limits.visits) {
      const std::uint64_t have = search.root_visits();
      budget = limits.visits > have ? limits.visits - have : 0;
    }
    if (limits.playouts)
      budget =
          std::min(budget, limits.playouts > progress.playouts ? limits.playouts - progress.playouts
                                                               : std::uint64_t(0));
    // The root needs its own evaluation before anything else is worth doing.
    const bool must = !search.root_expanded() && !search.game_over();
    if (budget == 0 && !must) break;
    if (search.game_over()) break;
    if (!must && limits.stop && limits.stop->load(std::memory_order_relaxed)) break;
    if (!must && limits.time != Clock::duration::zero() && Clock::now() - start >= limits.time)
      break;
    const std::uint64_t before = search.counters().playouts;
    const int n = search.gather(requests, std::max<std::uint64_t>(budget, 1));
    if (n > 0) evaluator.evaluate(std::span<nn::EvalRequest>(requests.data(), std::size_t(n)));
    search.backup(std::span<const nn::EvalRequest>(requests.data(), std::size_t(n)));
    progress.playouts += search.counters().playouts - before;
    progress.elapsed = Clock::now() - start;
    if (on_round) on_round(progress);
  }
  progress.elapsed = Clock::now() - start;
  return progress;
}

}  // namespace chessrl::mcts
