// The option groups' flags (no LibTorch: chessrl::runtime_options).
#include "chessrl/runtime/options.h"

namespace chessrl::runtime {

void ProbeListenOptions::add_to(CLI::App& app) {
  app.add_option("--probe-listen", probe_listen,
                 "address of /healthz and /livez alone, for the kubelet's probes (a port no "
                 "NetworkPolicy rule opens); \"off\": none")
      ->capture_default_str();
}

void StatusListenOptions::add_to(CLI::App& app) {
  app.add_option("--metrics-listen", metrics_listen,
                 "/metrics and /healthz address; \"\" or \"off\" disables")
      ->capture_default_str();
  ProbeListenOptions::add_to(app);
}

void DeviceOptions::add_to(CLI::App& app, bool with_precision) {
  app.add_option("--device", device, "cpu, cuda or cuda:N")->capture_default_str();
  if (with_precision) {
    app.add_option("--precision", precision, "fp32, fp16 or bf16 (fp16/bf16 need CUDA)")
        ->capture_default_str();
  }
  app.add_option("--nn-threads", nn_threads,
                 "LibTorch CPU threads per forward pass (0: the cores over the evaluator workers)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_option("--max-model-params", max_model_params,
                 "refuse a model whose architecture has more parameters than this, before "
                 "allocating it (a registry version is skipped and counted; 0: no ceiling)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

void LayoutOptions::add_to(CLI::App& app, int& leaves_per_search) {
  app.add_option("--concurrent", concurrent_games,
                 "games played at once (0: search threads x batch / leaves)")
      ->check(CLI::Range(0, 65536))
      ->capture_default_str();
  app.add_option("--search-threads,--threads", search_threads,
                 "search threads, each playing its share of the games (0: twice the evaluator "
                 "workers)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  app.add_option("--leaves", leaves_per_search, "leaves gathered from each game per round")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--batch", batch,
                 "positions per forward pass aimed at (0: 64 on CPU, 256 on CUDA)")
      ->check(CLI::Range(0, 8192))
      ->capture_default_str();
  app.add_option("--workers", workers,
                 "evaluator workers (0: what the backend prefers on the device)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--cache", cache, "evaluator position cache entries (0: off)")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
}

}  // namespace chessrl::runtime
