// Pieces of `chessrl bench train` beside the benchmark itself: the thread
// settings its child processes get, its JSON result lines, and the PyTorch
// yardstick (train_yardstick.py run by a Python that imports torch).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace chessrl::tool {

// The thread settings every child gets: LibTorch's intra-op pool and the BLAS
// pool (OpenBLAS starts one thread per core otherwise), so a rank uses
// `threads` cores and no more. A command prefix ("env", "OMP_NUM_THREADS=...").
std::vector<std::string> env_prefix(int threads);

// A line that is a JSON object, else nullopt.
std::optional<nlohmann::json> parse_json(const std::string& line);

// What the yardstick trains: the same network, batch and steps as one rank.
struct YardstickRun {
  std::string net;
  int batch = 0, steps = 0, warmup = 0, threads = 1;
  std::string device = "cpu";
  bool mixed_precision = false;
};

struct Yardstick {
  std::string interpreter;
  std::string script;
  std::string torch_version;
};

// The first interpreter that imports torch: `python` ("auto": python3 on PATH,
// then Debian's /usr/bin/python3, which a pyenv or venv python3 first on PATH
// hides; "off": none), running `script` (empty: train_yardstick.py in the
// source tree). nullopt with `why` set when there is none.
std::optional<Yardstick> find_yardstick(const std::string& python, const std::string& script,
                                        std::string& why);

struct YardstickResult {
  double samples_per_second = 0;
  double step_seconds = 0;
  std::int64_t parameters = 0;
};

// Runs the yardstick; it checks its network has `expect_parameters`
// parameters. Throws chessrl::Error when it cannot start or gives no result.
YardstickResult run_yardstick(const Yardstick& y, const YardstickRun& run,
                              std::int64_t expect_parameters);

}  // namespace chessrl::tool
