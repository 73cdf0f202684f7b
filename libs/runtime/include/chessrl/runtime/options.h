// The command-line option groups the entry points share (KataGo's
// program/setup.h; lc0's factories, each declaring its own options): a group
// is the fields its flags set, with their defaults, and add_to(), which
// declares its flags (names, help, checks) on a CLI::App. A binary's settings
// are the groups it uses plus its own flags; config::finish then gives every
// flag its CHESSRL_* variable and --config key. The flags bind to the group's
// fields, so the group must outlive the parse. Start-up only; not thread-safe.
// The flags are declared in chessrl::runtime_options (no LibTorch, so a
// service's option tests start fast); what the values become (torch_options,
// fill) is chessrl::runtime's. The registry-client group needs gRPC:
// client_options.h (chessrl::runtime_client, services builds only).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "chessrl/core/result.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/model_limits.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/runtime/layout.h"

namespace chessrl::runtime {

// --probe-listen alone: where a service answers /healthz and /livez, and
// nothing else, for the kubelet's probes. A service whose one port already
// answers /metrics (chessrl-web's --listen) declares this part alone.
struct ProbeListenOptions {
  std::string probe_listen = "off";  // "off": none

  void add_to(CLI::App& app);
};

// --metrics-listen and --probe-listen: where a service answers /metrics and
// /healthz, and /healthz and /livez alone for the kubelet's probes.
struct StatusListenOptions : ProbeListenOptions {
  std::string metrics_listen;  // "" or "off": none; each service sets its own port

  // Whether --metrics-listen asks for a /metrics listener ("" and "off" do not).
  bool metrics_on() const { return !metrics_listen.empty() && metrics_listen != "off"; }

  // Declares both flags, --metrics-listen first.
  void add_to(CLI::App& app);
};

// --device, --precision, --nn-threads, --max-model-params: where and how an
// inference network runs (not the trainer's: it trains on --device, with
// --torch-threads).
struct DeviceOptions {
  std::string device = "cpu";  // cpu, cuda or cuda:N
  std::string precision = "fp32";
  int nn_threads = 0;  // LibTorch CPU threads per forward pass; 0: the cores over the workers
  // A model naming more parameters is refused before anything is allocated
  // (0: no ceiling); an operator's fresh --net has none.
  std::int64_t max_model_params = nn::kDefaultMaxModelParams;

  // Declares every flag of the group; without `with_precision`, no --precision
  // (the binary runs fp32 only).
  void add_to(CLI::App& app, bool with_precision = true);
  // The backend options the flags give; an error names the flag (--device, --precision).
  Result<nn::TorchBackendOptions> torch_options() const;
};

// --concurrent, --search-threads (alias --threads), --leaves, --batch,
// --workers, --cache: how a process that searches lays out its work. Zeros
// are filled by fill() with the rule of layout.h, so `chessrl-selfplay`,
// `chessrl selfplay` and `chessrl bench selfplay` lay out the same way.
struct LayoutOptions {
  int workers = 0;           // evaluator workers; 0: what the backend prefers on the device
  int search_threads = 0;    // 0: twice the workers
  int batch = 0;             // positions per forward pass aimed at; 0: 64 on a CPU, 256 on CUDA
  int concurrent_games = 0;  // games in flight; 0: enough to fill threads x batch
  std::size_t cache = 0;     // evaluator position cache entries; 0: off

  // Declares the group's flags; --leaves binds to `leaves_per_search`, the
  // search's own field (its default stays the search's).
  void add_to(CLI::App& app, int& leaves_per_search);
  // Fills the zeros (fill_layout) for `device` and `nn_threads`, never more
  // games in flight than `max_games` (0: no limit); writes them back here.
  SearchLayout fill(const std::string& device, int nn_threads, int leaves_per_search,
                    std::uint64_t max_games);
  // The evaluator that feeds a filled layout (evaluator_options in layout.h).
  nn::BatchEvaluatorOptions evaluator_options(int leaves_per_search) const;
};

}  // namespace chessrl::runtime
