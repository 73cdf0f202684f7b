// Averages gradients over the ranks of a process group, in buckets of about
// bucket_bytes. With overlap, a bucket's all-reduce starts from a gradient
// hook as soon as backward has produced every gradient in it (buckets are
// filled in reverse parameter order, the order backward produces them), so
// communication runs while the rest of backward computes. Gradients of
// earlier micro-batches (accumulation) are added in: only the last
// micro-batch's backward communicates. Internal to libs/train; not
// thread-safe (one training thread; backward runs hooks on one thread per
// device).
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <vector>

#include "chessrl/core/result.h"
#include "process_group.h"

namespace chessrl::train {

class GradReducer {
 public:
  // Precondition: the parameters are float32 on one device and require grad.
  GradReducer(std::vector<torch::Tensor> params, Collectives& pg, std::size_t bucket_bytes,
              bool overlap);
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  // Before each micro-batch's backward; `last`: the one whose backward
  // completes the step's gradients.
  void prepare(bool last);
  // After the last backward: starts what has not started, waits for every
  // bucket, and leaves the average over ranks in each parameter's grad.
  // Returns the seconds spent waiting (communication not hidden by backward).
  Result<double> finish();

  std::size_t buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::vector<std::size_t> params;
    std::vector<std::int64_t> offsets;
    torch::Tensor flat;
    std::size_t pending = 0;
    bool launched = false;
    c10::intrusive_ptr<c10d::Work> work;
  };
  void on_grad(std::size_t param, const torch::Tensor& grad);
  void fill_from_grads(Bucket& b);
  void launch(Bucket& b);

  std::vector<torch::Tensor> params_;
  Collectives& pg_;
  bool overlap_;
  bool last_ = false;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;
  std::vector<std::size_t> slot_of_;
  std::vector<unsigned> hooks_;
  std::string launch_error_;
};

}  // namespace chessrl::train
