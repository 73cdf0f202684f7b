#include "chessrl/mcts/node.h"

#include <cassert>

namespace chessrl::mcts {

void* NodeArena::allocate(std::size_t bytes, std::size_t align) {
  assert(bytes <= kBlockBytes);
  for (;;) {
    if (block_ < blocks_.size()) {
      const std::size_t start = (offset_ + align - 1) & ~(align - 1);
      if (start + bytes <= kBlockBytes) {
        used_before_ += start - offset_;
        offset_ = start + bytes;
        return blocks_[block_].get() + start;
      }
      used_before_ += kBlockBytes - offset_;
      ++block_;
      offset_ = 0;
      continue;
    }
    blocks_.push_back(std::make_unique<std::byte[]>(kBlockBytes));
  }
}

void NodeArena::reset() {
  block_ = 0;
  offset_ = 0;
  used_before_ = 0;
}

namespace {

void copy_into(const Node& from, Node& to, NodeArena& arena) {
  assert(from.in_flight == 0);
  to = from;
  to.parent = nullptr;
  to.edges = nullptr;
  if (from.num_edges == 0 || from.edges == nullptr) return;
  to.edges = arena.make<Edge>(from.num_edges);
  for (int i = 0; i < from.num_edges; ++i) {
    const Edge& e = from.edges[i];
    Edge& copy = to.edges[i];
    copy.prior = e.prior;
    copy.move = e.move;
    if (e.node) {
      copy.node = arena.make<Node>();
      copy_into(*e.node, *copy.node, arena);
      copy.node->parent = &to;
    }
  }
}

}  // namespace

Node* copy_subtree(const Node& node, NodeArena& arena) {
  Node* root = arena.make<Node>();
  copy_into(node, *root, arena);
  return root;
}

}  // namespace chessrl::mcts
