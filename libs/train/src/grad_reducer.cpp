#include "grad_reducer.h"

#include <torch/torch.h>

#include <chrono>

#include "process_group.h"

namespace chessrl::train {

GradReducer::GradReducer(std::vector<torch::Tensor> params, Collectives& pg,
                         std::size_t bucket_bytes, bool overlap)
    : params_(std::move(params)), pg_(pg), overlap_(overlap) {
  bucket_of_.resize(params_.size());
  slot_of_.resize(params_.size());
  // Reverse order: backward produces the last layers' gradients first.
  Bucket current;
  std::int64_t numel = 0;
  auto close = [&] {
    if (current.params.empty()) return;
    current.flat = torch::zeros({numel}, params_.front().options().requires_grad(false));
    buckets_.push_back(std::move(current));
    current = Bucket{};
    numel = 0;
  };
  for (std::size_t k = params_.size(); k-- > 0;) {
    const std::int64_t n = params_[k].numel();
    if (!current.params.empty() && std::size_t(numel + n) * sizeof(float) > bucket_bytes) close();
    bucket_of_[k] = buckets_.size();
    slot_of_[k] = current.params.size();
    current.params.push_back(k);
    current.offsets.push_back(numel);
    numel += n;
  }
  close();
  if (overlap_)
    for (std::size_t k = 0; k < params_.size(); ++k)
      hooks_.push_back(
          params_[k].register_hook([this, k](const torch::Tensor& grad) { on_grad(k, grad); }));
}

GradReducer::~GradReducer() {
  for (std::size_t k = 0; k < hooks_.size(); ++k) params_[k].remove_hook(hooks_[k]);
}

void GradReducer::prepare(bool last) {
  last_ = last;
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.launched = false;
    b.work.reset();
  }
}

void GradReducer::on_grad(std::size_t param, const torch::Tensor& grad) {
  if (!last_) return;
  Bucket& b = buckets_[bucket_of_[param]];
  if (b.launched) return;  // a parameter used twice: the hook fired already
  const std::size_t slot = slot_of_[param];
  const torch::Tensor& p = params_[param];
  torch::NoGradGuard no_grad;
  torch::Tensor view = b.flat.narrow(0, b.offsets[slot], p.numel()).view_as(p);
  // The hook runs before autograd adds `grad` into p.grad (earlier
  // micro-batches' sum), so the bucket gets the step's total.
  if (p.grad().defined())
    torch::add_out(view, p.grad(), grad);
  else
    view.copy_(grad);
  if (--b.pending == 0) launch(b);
}

void GradReducer::fill_from_grads(Bucket& b) {
  torch::NoGradGuard no_grad;
  for (std::size_t s = 0; s < b.params.size(); ++s) {
    const torch::Tensor& p = params_[b.params[s]];
    torch::Tensor view = b.flat.narrow(0, b.offsets[s], p.numel()).view_as(p);
    if (p.grad().defined())
      view.copy_(p.grad());
    else
      view.zero_();
  }
}

void GradReducer::launch(Bucket& b) {
  b.launched = true;
  try {
    std::vector<torch::Tensor> v{b.flat};
    b.work = pg_.allreduce(v);
  } catch (const std::exception& e) {
    if (launch_error_.empty()) launch_error_ = e.what();
  }
}

Result<double> GradReducer::finish() {
  for (Bucket& b : buckets_)
    if (!b.launched) {
      fill_from_grads(b);
      launch(b);
    }
  const auto start = std::chrono::steady_clock::now();
  if (!launch_error_.empty()) {
    std::string e = launch_error_;
    launch_error_.clear();
    return fail("gradient all-reduce failed: " + e);
  }
  for (Bucket& b : buckets_)
    if (auto r = wait_work(b.work, "gradient all-reduce"); !r) return fail(r.error());
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  torch::NoGradGuard no_grad;
  const double inv = 1.0 / double(pg_.getSize());
  for (Bucket& b : buckets_) {
    b.flat.mul_(inv);
    for (std::size_t s = 0; s < b.params.size(); ++s) {
      torch::Tensor& p = params_[b.params[s]];
      torch::Tensor view = b.flat.narrow(0, b.offsets[s], p.numel()).view_as(p);
      if (p.grad().defined())
        p.mutable_grad().copy_(view);
      else
        p.mutable_grad() = view.clone();
    }
  }
  return waited;
}

}  // namespace chessrl::train
