// The trainer's optimizer: built from the options, saved to and loaded from a
// checkpoint's archive. Internal to libs/train; includes LibTorch.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/train/trainer.h"

namespace chessrl::train {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainerOptions& o,
                                                        std::vector<torch::Tensor> params);
std::string save_optimizer(torch::optim::Optimizer& opt);
Result<void> load_optimizer(torch::optim::Optimizer& opt, std::string_view bytes,
                            const torch::Device& device);

}  // namespace chessrl::train
