// ModelRegistryImpl::LeaseModel: holds a published version back from pruning
// (--keep-models) for a while, so the evaluator's candidate is still there
// when its match ends, however fast the trainer publishes. The lease lives in
// the store (ModelStore::lease), so every replay process sharing the Redis
// honours it.
#include <chrono>
#include <cstdint>
#include <string>

#include "handler_util.h"
#include "chessrl/replay_service/replay_service.h"

namespace chessrl::replay_service {

using grpc::Status;
using grpc::StatusCode;
using handler::authorized;
using handler::store_error;
using handler::unavailable;

namespace {

// The longest lease one call may ask for: a holder that dies leaves its
// version kept at most this long past its last renewal.
constexpr std::uint32_t kMaxLeaseSeconds = 3600;

}  // namespace

Status ModelRegistryImpl::LeaseModel(grpc::ServerContext* context,
                                     const v1::LeaseModelRequest* request, v1::ModelInfo* reply) {
  return authorized(metrics_, auth_, *context, rpc::Action::kLeaseModel, "LeaseModel", [&] {
    const std::uint64_t version = request->version();
    if (version == 0) {
      return Status(StatusCode::INVALID_ARGUMENT, "LeaseModel: version must be > 0");
    }
    if (request->seconds() > kMaxLeaseSeconds) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    "LeaseModel: a lease of " + std::to_string(request->seconds()) +
                        " s is longer than the most a lease may last (" +
                        std::to_string(kMaxLeaseSeconds) + " s); renew it instead");
    }
    auto leased = store_.lease(version, std::chrono::seconds(request->seconds()));
    if (!leased.ok()) return unavailable("LeaseModel", leased.error());
    if (!*leased) {
      return Status(StatusCode::NOT_FOUND,
                    "LeaseModel: no version " + std::to_string(version) +
                        " (never published, or pruned: the registry keeps the newest "
                        "--keep-models versions, the best and the leased)");
    }
    auto meta = store_.info(version);
    if (!meta.ok()) return store_error("LeaseModel", meta);
    if (!meta->has_value()) {
      return Status(StatusCode::NOT_FOUND, "LeaseModel: version " + std::to_string(version) +
                                               " vanished while it was leased");
    }
    *reply = to_proto(**meta);
    return Status::OK;
  });
}

}  // namespace chessrl::replay_service
