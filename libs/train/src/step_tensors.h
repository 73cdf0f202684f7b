// Tensor helpers of the training step (libs/train/src, LibTorch): batch-norm
// statistics saved and put back when a step fails between ranks, and CUDA
// autocast on and off across LibTorch versions.
#pragma once

#include <torch/torch.h>  // first: the headers below assume it

#include <ATen/autocast_mode.h>

#include <vector>

#include "chessrl/nn/torch_network.h"

namespace chessrl::train {

// Float tensors (batch-norm statistics) that ranks update from their own data.
inline std::vector<torch::Tensor> float_buffers(nn::Network& net) {
  std::vector<torch::Tensor> out;
  for (auto& b : net->buffers())
    if (b.is_floating_point()) out.push_back(b);
  return out;
}

// Copies tensors and puts the copies back on destruction unless disarmed.
class BufferRestore {
 public:
  explicit BufferRestore(std::vector<torch::Tensor> tensors) : tensors_(std::move(tensors)) {
    torch::NoGradGuard no_grad;
    for (auto& t : tensors_) saved_.push_back(t.clone());
  }
  ~BufferRestore() {
    if (saved_.empty()) return;
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < tensors_.size(); ++i) tensors_[i].copy_(saved_[i]);
  }
  void disarm() { saved_.clear(); }

 private:
  std::vector<torch::Tensor> tensors_, saved_;
};

// bf16 autocast on CUDA for the forward pass, on or off (off also drops the
// cast weights it cached). LibTorch 2.4 made the autocast calls per device type.
inline void set_cuda_autocast(bool on) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  if (on) at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCUDA, on);
#else
  if (on) at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
  at::autocast::set_enabled(on);
#endif
  if (!on) at::autocast::clear_cache();
}

}  // namespace chessrl::train
