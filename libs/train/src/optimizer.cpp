#include "optimizer.h"

#include <torch/optim/adamw.h>

#include <sstream>

namespace chessrl::train {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainerOptions& o,
                                                        std::vector<torch::Tensor> params) {
  if (o.optimizer == OptimizerKind::kAdamW)
    return std::make_unique<torch::optim::AdamW>(std::move(params),
                                                 torch::optim::AdamWOptions(o.lr)
                                                     .betas({o.adam_beta1, o.adam_beta2})
                                                     .eps(o.adam_eps)
                                                     .weight_decay(o.weight_decay));
  return std::make_unique<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(o.lr)
                                                                    .momentum(o.momentum)
                                                                    .nesterov(o.momentum > 0)
                                                                    .weight_decay(o.weight_decay));
}

std::string save_optimizer(torch::optim::Optimizer& opt) {
  torch::serialize::OutputArchive archive;
  opt.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

Result<void> load_optimizer(torch::optim::Optimizer& opt, std::string_view bytes,
                            const torch::Device& device) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(bytes.data(), bytes.size(), device);
    opt.load(archive);
  } catch (const std::exception& e) {
    return fail(std::string("cannot load the optimizer state: ") + e.what());
  }
  return {};
}

}  // namespace chessrl::train
