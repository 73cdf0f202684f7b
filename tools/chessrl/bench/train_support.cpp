#include "bench/train_support.h"

#include <chrono>
#include <filesystem>

#include "chessrl/core/error.h"
#include "chessrl/core/subprocess.h"

#ifndef CHESSRL_SOURCE_DIR
#define CHESSRL_SOURCE_DIR ""
#endif

namespace chessrl::tool {

std::vector<std::string> env_prefix(int threads) {
  return {"env", "OMP_NUM_THREADS=" + std::to_string(threads),
          "OPENBLAS_NUM_THREADS=" + std::to_string(threads)};
}

std::optional<nlohmann::json> parse_json(const std::string& line) {
  if (line.empty() || line.front() != '{') return std::nullopt;
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

std::optional<Yardstick> find_yardstick(const std::string& python_option, const std::string& script,
                                        std::string& why) {
  if (python_option == "off") {
    why = "--python off";
    return std::nullopt;
  }
  Yardstick y;
  y.script = script;
  if (y.script.empty()) {
    const std::filesystem::path beside =
        std::filesystem::path(CHESSRL_SOURCE_DIR) / "tools" / "chessrl" / "bench" / "train_yardstick.py";
    y.script = beside.string();
  }
  if (!std::filesystem::exists(y.script)) {
    why = "the script " + y.script + " is missing (pass --python-script)";
    return std::nullopt;
  }
  std::vector<std::string> candidates;
  if (python_option != "auto") {
    candidates.push_back(python_option);
  } else {
    candidates.push_back("python3");
    if (std::filesystem::exists("/usr/bin/python3")) candidates.push_back("/usr/bin/python3");
  }
  std::string tried;
  for (const std::string& python : candidates) {
    tried += (tried.empty() ? "" : ", ") + python;
    if (python.find('/') == std::string::npos && !find_program(python)) continue;
    auto child = Subprocess::start(
        {python, "-c",
         "try:\n import torch\n print('torch', torch.__version__)\nexcept Exception as e:\n "
         "print('error', e)"});
    if (!child.ok()) continue;
    auto line = child->read_line(std::chrono::seconds(60));
    if (line && line->rfind("torch ", 0) == 0) {
      y.interpreter = python;
      y.torch_version = line->substr(6);
      return y;
    }
  }
  why = "no Python with PyTorch (`import torch` failed with " + tried +
        "; Debian: apt install python3-torch)";
  return std::nullopt;
}

YardstickResult run_yardstick(const Yardstick& y, const YardstickRun& o,
                              std::int64_t expect_parameters) {
  std::vector<std::string> argv = env_prefix(o.threads);
  argv.insert(argv.end(),
              {y.interpreter, y.script, "--net", o.net, "--batch", std::to_string(o.batch),
               "--steps", std::to_string(o.steps), "--warmup", std::to_string(o.warmup),
               "--threads", std::to_string(o.threads), "--expect-params",
               std::to_string(expect_parameters), "--device", o.device});
  if (o.mixed_precision) argv.push_back("--mixed-precision");
  auto child = Subprocess::start(argv);
  if (!child.ok()) throw Error("bench train: cannot start the yardstick: " + child.error());
  while (auto line = child->read_line(std::chrono::minutes(10))) {
    auto j = parse_json(*line);
    if (!j || !j->contains("samples_per_second")) continue;
    return {(*j)["samples_per_second"].get<double>(), (*j)["step_seconds"].get<double>(),
            (*j)["parameters"].get<std::int64_t>()};
  }
  throw Error("bench train: the Python yardstick gave no result (see its messages above)");
}

}  // namespace chessrl::tool
