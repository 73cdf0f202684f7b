#include "chessrl/nn/torch_backend.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <dlfcn.h>
#include <malloc.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cstring>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "chessrl/core/error.h"
#include "chessrl/nn/torch_network.h"

namespace chessrl::nn {
namespace {

static_assert(sizeof(InputPlanes) == kInputPlanes * 12,
              "InputPlanes must be masks then values, unpadded");
static_assert(sizeof(FeaturePlanes) == kFeaturePlanes * 12,
              "FeaturePlanes must be masks then values, unpadded");

torch::ScalarType scalar_type(Precision p) {
  switch (p) {
    case Precision::kFloat16:
      return torch::kHalf;
    case Precision::kBFloat16:
      return torch::kBFloat16;
    default:
      return torch::kFloat;
  }
}

class TorchBackend : public InferenceBackend {
 public:
  TorchBackend(Network network, torch::Device device, const TorchBackendOptions& options,
               int streams)
      : network_(std::move(network)),
        device_(device),
        options_(options),
        dtype_(scalar_type(options.precision)),
        streams_(streams),
        planes_(input_planes(network_->config())) {
    // Made once here: forward() runs on several threads and must not create it lazily.
    if (!device_.is_cpu()) {
      shifts_ = torch::arange(64, torch::TensorOptions(torch::kLong).device(device_));
      // The weights and shifts_ were written on the default stream; the passes run on
      // streams of their own (below), which must not start before that work is done.
      torch::cuda::synchronize(device_.index());
    }
  }

  void forward(std::span<const InputPlanes> inputs, std::span<float> policy_logits,
               std::span<Wdl> wdl) override {
    const auto n = std::int64_t(inputs.size());
    if (n == 0) return;
    try {
      c10::InferenceMode guard;
      // On CUDA each calling thread (an evaluator worker) runs its passes on a stream of
      // its own, so one pass's copies in and out overlap the other's kernels; on the
      // default stream the two would run one after the other.
      std::optional<c10::StreamGuard> on_stream;
      if (device_.is_cuda()) on_stream.emplace(thread_stream());
      torch::Tensor x = device_.is_cpu() ? expand_on_cpu(inputs) : expand_on_device(inputs);
      if (options_.channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
      NetworkOutput out = network_->forward(x);
      torch::Tensor policy = out.policy.to(torch::kCPU, torch::kFloat).contiguous();
      torch::Tensor probs =
          torch::softmax(out.wdl.to(torch::kFloat), 1).to(torch::kCPU).contiguous();
      std::memcpy(policy_logits.data(), policy.data_ptr<float>(),
                  size_t(n) * kPolicySize * sizeof(float));
      const float* p = probs.data_ptr<float>();
      for (std::int64_t i = 0; i < n; ++i) wdl[size_t(i)] = {p[3 * i], p[3 * i + 1], p[3 * i + 2]};
    } catch (const c10::Error& e) {
      throw Error("libtorch forward pass on " + device_.str() +
                  " failed: " + e.what_without_backtrace());
    }
  }

  int preferred_streams() const override { return streams_; }

  std::string describe() const override {
    return "libtorch " + device_.str() + " " + precision_name(options_.precision) + " " +
           network_->config().name() + (options_.channels_last ? " nhwc" : " nchw");
  }

 private:
  // The planes the network takes: the 112 classic ones, plus the chess
  // features (encoding.h) computed here from them when it takes those too.
  torch::Tensor expand_on_cpu(std::span<const InputPlanes> inputs) {
    const auto n = std::int64_t(inputs.size());
    torch::Tensor x = torch::empty({n, planes_, 8, 8}, torch::kFloat);
    float* data = x.data_ptr<float>();
    for (std::int64_t i = 0; i < n; ++i)
      expand(inputs[size_t(i)], data + i * planes_ * 64, planes_);
    return x;
  }

  // Ships the compact planes (1.3 KB a position instead of 28 KB of floats) and
  // expands them on the device. Each position's row holds `planes_` masks, then
  // as many values: InputPlanes itself for the 112 classic planes; with the
  // chess features, those appended after each half (computed here, on the host).
  torch::Tensor expand_on_device(std::span<const InputPlanes> inputs) {
    const auto n = std::int64_t(inputs.size());
    const std::int64_t row = std::int64_t(planes_) * 12;
    torch::Tensor host =
        torch::empty({n, row}, torch::TensorOptions(torch::kUInt8).pinned_memory(true));
    auto* bytes = static_cast<std::uint8_t*>(host.data_ptr());
    if (planes_ == kInputPlanes) {
      std::memcpy(bytes, inputs.data(), size_t(n * row));
    } else {
      for (std::int64_t i = 0; i < n; ++i) {
        const InputPlanes& in = inputs[size_t(i)];
        const FeaturePlanes f = chess_features(in);
        std::uint8_t* out = bytes + i * row;
        std::memcpy(out, in.masks.data(), sizeof(in.masks));
        out += sizeof(in.masks);
        std::memcpy(out, f.masks.data(), sizeof(f.masks));
        out += sizeof(f.masks);
        std::memcpy(out, in.values.data(), sizeof(in.values));
        out += sizeof(in.values);
        std::memcpy(out, f.values.data(), sizeof(f.values));
      }
    }
    torch::Tensor dev = host.to(device_, /*non_blocking=*/true);
    torch::Tensor masks = dev.narrow(1, 0, planes_ * 8).contiguous().view(torch::kLong);
    torch::Tensor values = dev.narrow(1, planes_ * 8, planes_ * 4).contiguous().view(torch::kFloat);
    torch::Tensor bits = masks.unsqueeze(-1).bitwise_right_shift(shifts_).bitwise_and(1);
    return (bits.to(dtype_) * values.unsqueeze(-1).to(dtype_)).view({n, planes_, 8, 8});
  }

  // The calling thread's stream on device_, taken from LibTorch's pool at its first
  // pass and kept for the thread's life (one per device it has run on).
  c10::Stream thread_stream() const {
    thread_local std::vector<std::pair<c10::Device, c10::Stream>> streams;
    for (const auto& [device, stream] : streams)
      if (device == device_) return stream;
    const c10::impl::VirtualGuardImpl impl(device_.type());
    const c10::Stream stream = impl.getStreamFromGlobalPool(device_);
    streams.emplace_back(device_, stream);
    return stream;
  }

  Network network_;
  torch::Device device_;
  TorchBackendOptions options_;
  torch::ScalarType dtype_;
  int streams_;
  int planes_;            // input planes the network takes (encoding.h)
  torch::Tensor shifts_;  // 0..63 on the device, made once
};

// Moves every weight to the device and dtype, convolution weights to NHWC when asked.
// Folded convolutions keep their bias outside the parameter list, so each
// convolution's bias is moved by hand too.
void place(Network& network, torch::Device device, torch::ScalarType dtype, bool channels_last) {
  torch::NoGradGuard no_grad;
  network->to(device, dtype);
  for (const auto& module : network->modules(/*include_self=*/false)) {
    auto* conv = dynamic_cast<torch::nn::Conv2dImpl*>(module.get());
    if (!conv) continue;
    if (conv->bias.defined()) conv->bias = conv->bias.to(device, dtype);
    if (channels_last)
      conv->weight.set_data(conv->weight.contiguous(at::MemoryFormat::ChannelsLast));
  }
}

// LibTorch allocates each activation afresh. glibc serves blocks over 128 KiB
// with mmap and returns them at free, so every forward pass page-faults its
// activations in again: measured here, half the time of a 6x64 batch of 64 on
// 2 cores. Raising the thresholds keeps those blocks in the heap for reuse.
// Process-wide, set once, before the first forward pass.
void keep_large_blocks_in_the_heap() {
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return true;
  }();
  (void)done;
}

// Debian's LibTorch calls BLAS (for the dense layers) through libblas.so.3,
// which is OpenBLAS when installed. OpenBLAS keeps a thread pool of its own, one
// per core, that spins on sched_yield between calls and takes cores from the
// convolutions: measured here, a 6x64 batch of 64 ran 25% faster with it at
// one thread. It gets the same thread count as LibTorch, when present.
void set_openblas_threads(int threads) {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(threads);
}

}  // namespace

std::string precision_name(Precision p) {
  switch (p) {
    case Precision::kFloat16:
      return "fp16";
    case Precision::kBFloat16:
      return "bf16";
    default:
      return "fp32";
  }
}

Result<Precision> parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::kFloat32;
  if (text == "fp16") return Precision::kFloat16;
  if (text == "bf16") return Precision::kBFloat16;
  return fail("precision '" + text + "' is not one of fp32, fp16, bf16");
}

CpuSplit default_cpu_split(int cores) {
  if (cores <= 0) cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const int workers = std::min(cores, 4);
  return {workers, std::max(1, cores / workers)};
}

TorchInfo torch_info() {
  TorchInfo info;
  info.version = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
                 "." + std::to_string(TORCH_VERSION_PATCH);
  info.cuda_build = at::hasCUDA();
  info.cuda_devices = info.cuda_build ? int(torch::cuda::device_count()) : 0;
  info.cpu_threads = at::get_num_threads();
  return info;
}

Result<std::unique_ptr<InferenceBackend>> make_torch_backend(const Checkpoint& checkpoint,
                                                             const TorchBackendOptions& options) {
  std::optional<torch::Device> device;
  try {
    device.emplace(options.device);
  } catch (const c10::Error&) {
    return fail("device '" + options.device + "' is not cpu, cuda or cuda:N");
  }
  if (!device->is_cpu() && !device->is_cuda())
    return fail("device '" + options.device + "' is not cpu, cuda or cuda:N");
  // Concurrent forward passes that fill the device: on CUDA two, so one batch
  // is copied while the other computes; on the CPU the cores over the threads
  // each pass uses.
  int streams = 2;
  if (device->is_cuda()) {
    if (!at::hasCUDA())
      return fail("device '" + options.device + "': this LibTorch (" + torch_info().version +
                  ") was built without CUDA");
    const int count = int(torch::cuda::device_count());
    if (count == 0) return fail("device '" + options.device + "': no CUDA GPU is visible");
    if (device->has_index() && device->index() >= count)
      return fail("device '" + options.device + "': only " + std::to_string(count) +
                  " GPU(s) visible");
    // TF32 for any fp32 matrix work left ("high": the setting that replaces LibTorch
    // 2.x's deprecated allow-TF32 setters, in LibTorch since 1.12; cuDNN's convolutions
    // use TF32 by default), and cuDNN's autotuner picking the fastest kernels for each
    // batch shape (the first pass at a new shape pays for the search).
    at::globalContext().setFloat32MatmulPrecision("high");
    at::globalContext().setBenchmarkCuDNN(true);
  } else {
    if (options.precision != Precision::kFloat32)
      return fail("precision " + precision_name(options.precision) +
                  " needs a CUDA device; the CPU runs fp32");
    const int threads = options.threads > 0 ? options.threads : default_cpu_split().threads;
    at::set_num_threads(threads);
    set_openblas_threads(threads);
    const CpuSplit split = default_cpu_split();
    streams = std::max(1, split.workers * split.threads / threads);
  }
  auto network = network_from_checkpoint(checkpoint, options.limits);
  if (!network) return fail(network.error());
  if (device->is_cpu()) keep_large_blocks_in_the_heap();
  try {
    (*network)->eval();
    if (options.fold_batchnorm) (*network)->fold_batchnorm();
    place(*network, *device, scalar_type(options.precision), options.channels_last);
  } catch (const c10::Error& e) {
    return fail("cannot place the network on " + options.device + ": " +
                e.what_without_backtrace());
  }
  return std::unique_ptr<InferenceBackend>(
      std::make_unique<TorchBackend>(std::move(*network), *device, options, streams));
}

Checkpoint fresh_checkpoint(const NetworkConfig& config, std::uint64_t seed, ModelInfo info) {
  Network network = make_network(config, seed);
  network->eval();
  return to_checkpoint(network, std::move(info));
}

}  // namespace chessrl::nn
