// UciEngine: a chess engine speaking the Universal Chess Interface over text
// streams, playing with the PUCT search (mcts::Search) through a batched
// network evaluator. The search runs on its own thread; commands keep being
// read while it runs (isready, stop). Every output line goes through one
// mutex-protected writer and is flushed at once.
//
// Malformed input never throws or crashes: it is reported on an
// "info string" line and otherwise ignored. Not thread-safe: one thread
// calls handle() (or run()); the engine's own search thread is internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "chessrl/chess/position.h"
#include "chessrl/mcts/search.h"
#include "chessrl/nn/backend.h"
#include "chessrl/nn/batch_evaluator.h"

namespace chessrl::uci {

// Makes the network for a checkpoint path (empty: the caller's default) with
// `threads` CPU threads per forward pass (0: automatic). May throw
// chessrl::Error; the engine then reports it and keeps its previous network.
using BackendFactory =
    std::function<std::shared_ptr<nn::InferenceBackend>(const std::string& model, int threads)>;

struct UciEngineOptions {
  std::string name = "chessrl";
  std::string author = "the chessrl authors";
  BackendFactory backend_factory;    // required
  std::string model;                 // the Model option's initial value
  int threads = 0;                   // the Threads option's initial value
  mcts::SearchParams search;         // the CPuct option overrides search.cpuct
  int nodes = 800;                   // the Nodes option: visits for a `go` without limits
  int minibatch = 16;                // the MinibatchSize option: leaves per round
  std::size_t cache_size = 1 << 17;  // positions in the evaluator's cache
};

class UciEngine {
 public:
  // `out` must outlive the engine. The network is made lazily, at the first
  // isready or go.
  UciEngine(UciEngineOptions options, std::ostream& out);
  // Stops a running search (its bestmove is printed) and waits for it.
  ~UciEngine();
  UciEngine(const UciEngine&) = delete;
  UciEngine& operator=(const UciEngine&) = delete;

  // Processes one command line; false once `quit` was seen (a running search
  // is stopped first and prints its bestmove).
  bool handle(std::string_view line);
  // Reads and handles lines until quit or end of input; at end of input a
  // running search is stopped and waited for.
  void run(std::istream& in);

  // Whether a search is running (it has not printed its bestmove yet).
  bool searching() const;
  // Blocks until a running search ends by itself (a `go infinite` never
  // does); for tests and scripts.
  void wait();

 private:
  // What a `go` asked for, resolved to limits when it arrives.
  struct SearchPlan {
    std::uint64_t visits = 0;
    std::chrono::steady_clock::duration time{};  // zero: no time limit
    bool infinite = false;
    int leaves_per_round = 16;
    bool show_wdl = true;
    std::chrono::steady_clock::time_point start;
  };

  // Serialises whole lines from the command and the search threads.
  class LineWriter {
   public:
    explicit LineWriter(std::ostream& out) : out_(out) {}
    void write(std::string_view line);

   private:
    std::mutex mutex_;
    std::ostream& out_;
  };

  void dispatch(std::string_view command, const std::vector<std::string_view>& args,
                std::string_view line);
  void info_string(std::string_view text);
  void cmd_uci();
  void cmd_isready();
  void cmd_setoption(const std::vector<std::string_view>& args, std::string_view line);
  void cmd_position(const std::vector<std::string_view>& args);
  void cmd_go(const std::vector<std::string_view>& args);

  // Makes (or remakes, after Model/Threads changed) the network and the
  // evaluator. Returns whether an evaluator is available. Not while searching.
  bool ensure_backend();
  // Points the tree at the current position: advances along the moves played
  // since the tree's position when possible, else starts a new tree.
  void prepare_tree();
  void search_main(SearchPlan plan);
  void print_info(const SearchPlan& plan, std::uint64_t playouts);
  // Asks a running search to stop (when `stop`) and waits for its thread.
  void finish_search(bool stop);

  UciEngineOptions options_;
  LineWriter writer_;

  // Settings (command thread only; a search gets a copy in its SearchPlan).
  std::string model_;
  int threads_ = 0;
  int nodes_ = 800;
  int minibatch_ = 16;
  bool show_wdl_ = true;
  mcts::SearchParams params_;

  // The network: replaced only while no search runs.
  std::shared_ptr<nn::InferenceBackend> backend_;
  std::unique_ptr<nn::BatchEvaluator> evaluator_;
  std::string loaded_model_;
  int loaded_threads_ = 0;
  bool load_failed_ = false;  // the current settings failed to load; not retried

  // The position of the last `position` command: a start FEN and moves.
  std::string base_fen_;
  std::vector<chess::Move> moves_;
  chess::Position position_;

  // The tree and the position (start FEN and moves) its root stands for.
  std::unique_ptr<mcts::Search> search_;
  bool tree_valid_ = false;
  std::string tree_base_fen_;
  std::vector<chess::Move> tree_moves_;

  // The search thread. `running_` is true from go until its bestmove is out.
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<bool> halt_{false};  // run_search's stop flag
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;  // under stop_mutex_; ends a `go infinite`
  bool quit_ = false;
};

}  // namespace chessrl::uci
