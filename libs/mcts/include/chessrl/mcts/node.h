// The search tree: nodes and edges in a NodeArena. A node is a position
// reached in the tree; its edges are the legal moves there, each with its
// prior and, once visited, the child node. Every value stored in a node is from
// the point of view of the player who made the move into it (its "mover"), so
// a parent picks the child with the highest value.
//
// Memory: nodes and edge arrays are bump-allocated from an arena and never
// freed one by one; a whole tree goes at once (NodeArena::reset), and tree
// reuse copies the kept subtree into a second arena first (Tree::advance).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "chessrl/chess/types.h"

namespace chessrl::mcts {

// A bump allocator over 256 KiB blocks. reset() frees everything at once and
// keeps the blocks for reuse, so a long run allocates nothing in steady state.
// Not thread-safe.
class NodeArena {
 public:
  static constexpr std::size_t kBlockBytes = 256 * 1024;

  // `count` default-constructed objects of a trivially destructible T.
  template <class T>
  T* make(std::size_t count = 1) {
    static_assert(std::is_trivially_destructible_v<T>);
    void* p = allocate(sizeof(T) * count, alignof(T));
    T* objects = static_cast<T*>(p);
    for (std::size_t i = 0; i < count; ++i) new (objects + i) T();
    return objects;
  }
  void reset();
  std::size_t bytes_used() const { return used_before_ + offset_; }
  std::size_t bytes_reserved() const { return blocks_.size() * kBlockBytes; }

 private:
  void* allocate(std::size_t bytes, std::size_t align);

  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  std::size_t block_ = 0;        // index of the block being filled
  std::size_t offset_ = 0;       // bytes used in it
  std::size_t used_before_ = 0;  // bytes used in earlier blocks (including padding)
};

// Exactly known results: mate, stalemate, a draw by rule, or proven by search
// from its children (a forced mate or draw within the tree).
enum class Proof : std::uint8_t { kNone, kWin, kLoss, kDraw };  // for the node's mover

enum class NodeState : std::uint8_t {
  kNew,       // not evaluated yet
  kPending,   // sent to the network, waiting for its result
  kExpanded,  // has edges with priors
  kTerminal,  // the game is over here (proof says how)
};

struct Node;

struct Edge {
  Node* node = nullptr;  // null until first visited
  float prior = 0;
  chess::Move move;
};

struct Node {
  Node* parent = nullptr;
  Edge* edges = nullptr;
  double q = 0;                 // mean value for the mover, in [-1, 1]
  float d = 0;                  // mean draw probability
  std::uint32_t visits = 0;     // completed visits (this node and below)
  std::uint32_t in_flight = 0;  // visits on their way (virtual loss)
  std::uint16_t num_edges = 0;
  std::uint16_t proof_plies = 0;  // with a proof: plies from here to the game's end
  NodeState state = NodeState::kNew;
  Proof proof = Proof::kNone;

  bool proven() const { return proof != Proof::kNone; }
  // The exact value for the mover of a proven node.
  double proven_value() const {
    return proof == Proof::kWin ? 1.0 : proof == Proof::kLoss ? -1.0 : 0.0;
  }
};

// Copies the subtree under `node` into `arena` and returns the copy (its
// parent is null). Nothing may be in flight below `node`.
Node* copy_subtree(const Node& node, NodeArena& arena);

}  // namespace chessrl::mcts
