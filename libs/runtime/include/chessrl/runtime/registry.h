// The registry side of the model path (chessrl::runtime_rpc): fetching a
// version and building it, publishing one, and what a GetModel failure means.
// Failures are classified by gRPC status code, never by message text.
#pragma once

#include <cstdint>
#include <string>

#include <grpcpp/support/status.h>

#include "chessrl/core/result.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/runtime/model.h"

namespace chessrl::runtime {

// The label a GetModel failure with `code` is skipped under ("data_loss",
// "not_found", "too_large", "invalid"): the registry answered, and asking
// again fails the same way. "" when asking again later may pass (UNAVAILABLE,
// a deadline, a token refused, INTERNAL, ...).
std::string skip_reason(grpc::StatusCode code);

// Fetches `version` (0 and best: the registry's best; 0 alone: the latest)
// and builds it (build_model). The registry's failures are kUnavailable or
// kMissing by skip_reason(); the version in the result is the one fetched.
ModelLoad fetch_model(rpc::ModelRegistryClient& registry, std::uint64_t version, bool best,
                      const ModelOptions& options);

// Publishes `weights` as the registry's latest version + 1, with metadata
// `network`, `producer` and `step`; returns the version. Fails, publishing
// nothing, when the latest version of the same network was trained to a
// later step than `weights` (it would send self-play back). One attempt of each
// call as `registry`'s options say: the caller owns retrying (the trainer's
// publishing thread retries with backoff, a newer model first).
Result<std::uint64_t> publish_model(rpc::ModelRegistryClient& registry,
                                    const nn::Checkpoint& weights, const std::string& network,
                                    const std::string& producer);

}  // namespace chessrl::runtime
