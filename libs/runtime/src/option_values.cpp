// What the option groups' values become: a backend's options, a filled
// layout (chessrl::runtime, beside the rules they follow).
#include "chessrl/runtime/layout.h"
#include "chessrl/runtime/options.h"

namespace chessrl::runtime {

Result<nn::TorchBackendOptions> DeviceOptions::torch_options() const {
  if (device != "cpu" && device.rfind("cuda", 0) != 0)
    return fail("--device " + device + ": expected cpu, cuda or cuda:N");
  auto parsed = nn::parse_precision(precision);
  if (!parsed.ok()) return fail("--precision: " + parsed.error());
  nn::TorchBackendOptions options;
  options.device = device;
  options.precision = *parsed;
  options.threads = nn_threads;
  options.limits.max_parameters = max_model_params;
  return options;
}

SearchLayout LayoutOptions::fill(const std::string& device, int nn_threads, int leaves_per_search,
                                 std::uint64_t max_games) {
  const SearchLayout filled =
      fill_layout(SearchLayout{workers, search_threads, batch, concurrent_games}, device,
                  nn_threads, leaves_per_search, max_games);
  workers = filled.workers;
  search_threads = filled.threads;
  batch = filled.batch;
  concurrent_games = filled.concurrent_games;
  return filled;
}

nn::BatchEvaluatorOptions LayoutOptions::evaluator_options(int leaves_per_search) const {
  return runtime::evaluator_options(SearchLayout{workers, search_threads, batch, concurrent_games},
                                    leaves_per_search, cache);
}

}  // namespace chessrl::runtime
