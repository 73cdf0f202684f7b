#include "chessrl/runtime/registry.h"

#include <algorithm>
#include <utility>

namespace chessrl::runtime {

std::string skip_reason(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::DATA_LOSS:
      return "data_loss";
    case grpc::StatusCode::NOT_FOUND:
      return "not_found";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "too_large";
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "invalid";
    default:
      return "";  // may pass: UNAVAILABLE, a deadline, a token, INTERNAL, ...
  }
}

ModelLoad fetch_model(rpc::ModelRegistryClient& registry, std::uint64_t version, bool best,
                      const ModelOptions& options) {
  auto fetched = registry.get(best ? 0 : version, best);
  if (!fetched.ok()) {
    const std::string what =
        best ? std::string("the best model") : "v" + std::to_string(version);
    ModelLoad out;
    // A capacity refusal naming another replica may pass: not a reason to skip.
    out.reason = fetched.retry_elsewhere() ? "" : skip_reason(fetched.code());
    out.error = out.reason.empty() ? ModelError::kUnavailable : ModelError::kMissing;
    out.detail = fetched.error();
    out.message = what + ": " + out.detail;
    return out;
  }
  return build_model(fetched->second, fetched->first.version(), options);
}

Result<std::uint64_t> publish_model(rpc::ModelRegistryClient& registry,
                                    const nn::Checkpoint& weights, const std::string& network,
                                    const std::string& producer) {
  auto latest = registry.latest();
  if (!latest.ok()) return fail("publish: " + latest.error());
  const std::uint64_t newest = latest->has_value() ? (*latest)->version() : 0;
  if (newest >= rpc::kMaxModelVersion)
    return fail("publish: the registry's latest version is " + std::to_string(newest) +
                ", which leaves no next version (the largest is " +
                std::to_string(rpc::kMaxModelVersion) + "); was it published by hand?");
  // A model trained less far than the registry's newest of the same network
  // would send every self-play pod back to it (a trainer that lost its
  // checkpoints and starts from step 0, or one that redoes the steps since its
  // last checkpoint after a crash): not published. Self-play keeps the newest
  // until training passes that step. Another network is a deliberate switch.
  if (latest->has_value()) {
    const v1::ModelInfo& current = **latest;
    const auto net = current.metadata().find("network");
    const bool same_network = net == current.metadata().end() || net->second == network;
    const auto step = static_cast<std::uint64_t>(std::max<std::int64_t>(weights.info.step, 0));
    if (same_network && current.step() > step)
      return fail("publish: not published: the registry's latest version " +
                  std::to_string(newest) + " was trained to step " +
                  std::to_string(current.step()) + ", beyond this model's step " +
                  std::to_string(step) +
                  " (self-play keeps following version " + std::to_string(newest) +
                  " until training passes that step)");
  }
  const std::uint64_t version = newest + 1;
  nn::Checkpoint versioned = weights;
  versioned.info.version = static_cast<std::int64_t>(version);
  const std::string blob = nn::serialize_checkpoint(versioned);
  v1::ModelInfo info;
  info.set_version(version);
  info.set_step(static_cast<std::uint64_t>(weights.info.step));
  (*info.mutable_metadata())["network"] = network;
  (*info.mutable_metadata())["producer"] = producer;
  (*info.mutable_metadata())["step"] = std::to_string(weights.info.step);
  auto published = registry.publish(info, blob);
  if (!published.ok()) return fail("publish: " + published.error());
  return version;
}

}  // namespace chessrl::runtime
