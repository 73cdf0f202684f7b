#include "chessrl/nn/batch_evaluator.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <unordered_map>

namespace chessrl::nn {

using Clock = std::chrono::steady_clock;

namespace {

static_assert(sizeof(std::atomic<std::int32_t>) == sizeof(std::int32_t) &&
              std::atomic<std::int32_t>::is_always_lock_free);

// Sleeps while *word == expected (returns at once if it is not, or on a signal).
void futex_wait(std::atomic<std::int32_t>& word, std::int32_t expected) {
  ::syscall(SYS_futex, reinterpret_cast<std::int32_t*>(&word), FUTEX_WAIT_PRIVATE, expected,
            nullptr, nullptr, 0);
}

// Wakes the threads sleeping on `word`. Takes only the address: the object may
// be gone by now (see BatchEvaluator::Group).
void futex_wake_all(void* word) {
  ::syscall(SYS_futex, static_cast<std::int32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
            nullptr, 0);
}

}  // namespace

void prepare(EvalRequest& request, chess::Position& pos, std::span<const chess::Move> moves) {
  assert(moves.size() <= size_t(kMaxMoves));
  request.input = encode(pos, &request.key);
  const chess::Color mover = pos.side_to_move();
  request.num_moves = int(moves.size());
  for (size_t i = 0; i < moves.size(); ++i)
    request.policy_index[i] = std::uint16_t(policy_index(moves[i], mover));
  request.from_cache = false;
}

// A fixed number of entries in shards, each with its own lock; the oldest
// entry of a shard is replaced first (FIFO), so memory stays bounded.
class PositionCache {
 public:
  explicit PositionCache(size_t capacity)
      : shard_count_(std::bit_floor(std::clamp<size_t>(capacity / 64, 1, 64))),
        shards_(new Shard[shard_count_]) {
    const size_t per_shard = (capacity + shard_count_ - 1) / shard_count_;
    for (size_t i = 0; i < shard_count_; ++i) {
      shards_[i].slots.resize(per_shard);
      shards_[i].index.reserve(per_shard);
    }
  }

  bool lookup(EvalRequest& r) {
    Shard& s = shard(r.key);
    std::lock_guard lock(s.mutex);
    auto it = s.index.find(r.key);
    if (it == s.index.end()) return false;
    const Entry& e = s.slots[it->second];
    if (int(e.priors.size()) != r.num_moves) return false;  // a key collision
    std::copy(e.priors.begin(), e.priors.end(), r.priors.begin());
    r.wdl = e.wdl;
    return true;
  }

  void insert(const EvalRequest& r) {
    Shard& s = shard(r.key);
    std::lock_guard lock(s.mutex);
    if (s.index.contains(r.key)) return;
    Entry& e = s.slots[s.next];
    if (e.used) s.index.erase(e.key);
    e.used = true;
    e.key = r.key;
    e.wdl = r.wdl;
    e.priors.assign(r.priors.begin(), r.priors.begin() + r.num_moves);
    s.index.emplace(r.key, s.next);
    s.next = (s.next + 1) % std::uint32_t(s.slots.size());
  }

 private:
  struct Entry {
    std::uint64_t key = 0;
    bool used = false;
    Wdl wdl;
    std::vector<float> priors;
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::uint64_t, std::uint32_t> index;
    std::vector<Entry> slots;
    std::uint32_t next = 0;
  };
  Shard& shard(std::uint64_t key) { return shards_[(key >> 32) & (shard_count_ - 1)]; }

  size_t shard_count_;
  std::unique_ptr<Shard[]> shards_;
};

struct BatchEvaluator::Counters {
  std::atomic<std::uint64_t> requests{0}, cache_hits{0}, evaluated{0}, batches{0};
  std::atomic<std::uint64_t> forward_ns{0}, latency_ns{0};
  std::array<std::atomic<std::uint64_t>, EvaluatorStats::kLatencyBuckets> latency_histogram{};
};

double EvaluatorStats::latency_quantile(double q) const {
  std::uint64_t total = 0;
  for (auto n : latency_histogram) total += n;
  if (total == 0) return 0;
  const double target = q * double(total);
  std::uint64_t seen = 0;
  for (size_t i = 0; i < latency_histogram.size(); ++i) {
    seen += latency_histogram[i];
    if (double(seen) >= target) return std::exp2(double(i + 1) / 4) * 1e-6;
  }
  return std::exp2(double(kLatencyBuckets) / 4) * 1e-6;
}

EvaluatorStats operator-(const EvaluatorStats& a, const EvaluatorStats& b) {
  EvaluatorStats d;
  d.requests = a.requests - b.requests;
  d.cache_hits = a.cache_hits - b.cache_hits;
  d.evaluated = a.evaluated - b.evaluated;
  d.batches = a.batches - b.batches;
  d.forward_seconds = a.forward_seconds - b.forward_seconds;
  d.latency_seconds = a.latency_seconds - b.latency_seconds;
  for (size_t i = 0; i < d.latency_histogram.size(); ++i)
    d.latency_histogram[i] = a.latency_histogram[i] - b.latency_histogram[i];
  return d;
}

BatchEvaluator::BatchEvaluator(std::shared_ptr<InferenceBackend> backend,
                               BatchEvaluatorOptions options)
    : backend_(std::move(backend)), options_(options), counters_(std::make_unique<Counters>()) {
  options_.max_batch = std::max(1, options_.max_batch);
  if (options_.workers <= 0) options_.workers = backend_->preferred_streams();
  options_.workers = std::max(1, options_.workers);
  if (options_.cache_size > 0) cache_ = std::make_unique<PositionCache>(options_.cache_size);
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

BatchEvaluator::~BatchEvaluator() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& t : workers_) t.join();
}

void BatchEvaluator::evaluate(std::span<EvalRequest> requests) {
  Group group;
  const auto now = Clock::now();
  int misses = 0;
  std::uint64_t hits = 0;
  // Cache lookups happen on the caller's thread; only misses are queued.
  for (EvalRequest& r : requests) {
    r.from_cache = cache_ && r.key != 0 && cache_->lookup(r);
    if (r.from_cache)
      ++hits;
    else
      ++misses;
  }
  counters_->requests.fetch_add(requests.size(), std::memory_order_relaxed);
  counters_->cache_hits.fetch_add(hits, std::memory_order_relaxed);
  if (options_.on_lookup) options_.on_lookup(requests.size(), std::size_t(hits));
  if (misses == 0) return;

  group.remaining.store(misses, std::memory_order_relaxed);
  bool wake_all;
  {
    std::lock_guard lock(mutex_);
    for (EvalRequest& r : requests)
      if (!r.from_cache) queue_.push_back({&r, &group, now});
    wake_all = queue_.size() >= size_t(options_.max_batch);
  }
  // A full batch may release a worker that waits for the batch to fill, so
  // every worker is told; otherwise one idle worker is enough.
  if (wake_all)
    work_ready_.notify_all();
  else
    work_ready_.notify_one();

  for (std::int32_t left; (left = group.remaining.load(std::memory_order_acquire)) != 0;)
    futex_wait(group.remaining, left);
  if (group.error) std::rethrow_exception(group.error);
}

void BatchEvaluator::worker_loop() {
  std::vector<Pending> batch;
  std::vector<InputPlanes> inputs;
  std::vector<float> logits;
  std::vector<Wdl> wdl;
  batch.reserve(options_.max_batch);
  const size_t max_batch = size_t(options_.max_batch);
  std::unique_lock lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) {
      if (stopping_) return;
      continue;
    }
    // Wait for a full batch, but not past the oldest request's deadline.
    if (queue_.size() < max_batch && !stopping_) {
      const auto deadline = queue_.front().enqueued + options_.batch_timeout;
      work_ready_.wait_until(lock, deadline,
                             [&] { return stopping_ || queue_.size() >= max_batch; });
      if (queue_.empty()) continue;  // another worker took them
    }
    const size_t n = std::min(queue_.size(), max_batch);
    batch.assign(queue_.begin(), queue_.begin() + std::ptrdiff_t(n));
    queue_.erase(queue_.begin(), queue_.begin() + std::ptrdiff_t(n));
    const bool more = !queue_.empty();
    lock.unlock();
    if (more) work_ready_.notify_one();  // another worker can start on the rest
    run_batch(batch, inputs, logits, wdl);
    lock.lock();
  }
}

void BatchEvaluator::run_batch(std::vector<Pending>& batch, std::vector<InputPlanes>& inputs,
                               std::vector<float>& logits, std::vector<Wdl>& wdl) {
  const size_t n = batch.size();
  inputs.resize(n);
  logits.resize(n * kPolicySize);
  wdl.resize(n);
  for (size_t i = 0; i < n; ++i) inputs[i] = batch[i].request->input;

  std::exception_ptr error;
  const auto start = Clock::now();
  try {
    backend_->forward(inputs, logits, wdl);
  } catch (...) {
    error = std::current_exception();
  }
  const auto end = Clock::now();
  counters_->forward_ns.fetch_add(
      std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()),
      std::memory_order_relaxed);
  counters_->batches.fetch_add(1, std::memory_order_relaxed);
  counters_->evaluated.fetch_add(n, std::memory_order_relaxed);
  if (options_.on_batch) options_.on_batch(int(n), std::chrono::duration<double>(end - start).count());

  std::uint64_t latency_ns = 0;
  for (size_t i = 0; i < n; ++i) {
    EvalRequest& r = *batch[i].request;
    if (!error) {
      // Softmax over the legal moves only.
      const float* l = logits.data() + i * kPolicySize;
      float max_logit = -INFINITY;
      for (int k = 0; k < r.num_moves; ++k) max_logit = std::max(max_logit, l[r.policy_index[k]]);
      float sum = 0;
      for (int k = 0; k < r.num_moves; ++k) {
        r.priors[k] = std::exp(l[r.policy_index[k]] - max_logit);
        sum += r.priors[k];
      }
      for (int k = 0; k < r.num_moves; ++k) r.priors[k] /= sum;
      r.wdl = wdl[i];
      if (cache_ && r.key != 0) cache_->insert(r);
    }
    const auto waited =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - batch[i].enqueued);
    latency_ns += std::uint64_t(waited.count()) * 1000;
    const int bucket = waited.count() < 1 ? 0 : int(4 * std::log2(double(waited.count())));
    counters_->latency_histogram[std::clamp(bucket, 0, EvaluatorStats::kLatencyBuckets - 1)]
        .fetch_add(1, std::memory_order_relaxed);

    Group* g = batch[i].group;
    if (error && !g->error_claimed.exchange(true, std::memory_order_relaxed)) g->error = error;
    // The release publishes this request's results (and any error); after the
    // last decrement the group may be gone, so only its address is used.
    void* const word = &g->remaining;
    if (g->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) futex_wake_all(word);
  }
  counters_->latency_ns.fetch_add(latency_ns, std::memory_order_relaxed);
}

EvaluatorStats BatchEvaluator::stats() const {
  EvaluatorStats s;
  const Counters& c = *counters_;
  s.requests = c.requests.load(std::memory_order_relaxed);
  s.cache_hits = c.cache_hits.load(std::memory_order_relaxed);
  s.evaluated = c.evaluated.load(std::memory_order_relaxed);
  s.batches = c.batches.load(std::memory_order_relaxed);
  s.forward_seconds = double(c.forward_ns.load(std::memory_order_relaxed)) * 1e-9;
  s.latency_seconds = double(c.latency_ns.load(std::memory_order_relaxed)) * 1e-9;
  for (size_t i = 0; i < s.latency_histogram.size(); ++i)
    s.latency_histogram[i] = c.latency_histogram[i].load(std::memory_order_relaxed);
  return s;
}

}  // namespace chessrl::nn
