#include "chessrl/runtime/layout.h"

#include <algorithm>

#include "chessrl/nn/torch_backend.h"

namespace chessrl::runtime {

SearchLayout fill_layout(SearchLayout layout, const std::string& device, int nn_threads,
                         int leaves_per_search, std::uint64_t max_games) {
  const bool cuda = device.rfind("cuda", 0) == 0;
  if (layout.workers <= 0) {
    if (cuda) {
      layout.workers = 2;  // one batch copied while the other computes
    } else {
      const nn::CpuSplit split = nn::default_cpu_split();
      const int threads = nn_threads > 0 ? nn_threads : split.threads;
      layout.workers = std::max(1, split.workers * split.threads / threads);
    }
  }
  if (layout.threads <= 0) layout.threads = 2 * layout.workers;
  if (layout.batch <= 0) layout.batch = cuda ? 256 : 64;
  if (layout.concurrent_games <= 0)
    layout.concurrent_games =
        std::max(1, layout.threads * layout.batch / std::max(1, leaves_per_search));
  if (max_games > 0)
    layout.concurrent_games =
        int(std::min<std::uint64_t>(std::uint64_t(layout.concurrent_games), max_games));
  return layout;
}

nn::BatchEvaluatorOptions evaluator_options(const SearchLayout& layout, int leaves_per_search,
                                            std::size_t cache_size) {
  nn::BatchEvaluatorOptions e;
  const int threads = std::max(1, layout.threads);
  const int per_thread = (layout.concurrent_games + threads - 1) / threads * leaves_per_search;
  e.max_batch = std::max(1, std::min(per_thread, 4096));
  e.batch_timeout = std::chrono::microseconds(1000);
  e.workers = layout.workers;
  e.cache_size = cache_size;
  return e;
}

}  // namespace chessrl::runtime
