#include "hanging_registry.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "chessrl/core/error.h"
#include "chessrl/v1/models.grpc.pb.h"

namespace chessrl::testing {

class HangingRegistry::Service final : public v1::ModelRegistry::Service {
 public:
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  int calls() const { return calls_.load(); }

  grpc::Status PublishModel(grpc::ServerContext* context, grpc::ServerReader<v1::ModelChunk>*,
                            v1::ModelInfo*) override {
    return hang(context);
  }
  grpc::Status GetModel(grpc::ServerContext* context, const v1::GetModelRequest*,
                        grpc::ServerWriter<v1::ModelChunk>*) override {
    return hang(context);
  }
  grpc::Status LatestModel(grpc::ServerContext* context, const v1::LatestModelRequest*,
                           v1::ModelInfo*) override {
    return hang(context);
  }
  grpc::Status WatchModels(grpc::ServerContext* context, const v1::WatchModelsRequest*,
                           grpc::ServerWriter<v1::ModelInfo>*) override {
    return hang(context);
  }
  grpc::Status SetBest(grpc::ServerContext* context, const v1::SetBestRequest*,
                       v1::ModelInfo*) override {
    return hang(context);
  }
  grpc::Status BestModel(grpc::ServerContext* context, const v1::BestModelRequest*,
                         v1::ModelInfo*) override {
    return hang(context);
  }

 private:
  grpc::Status hang(grpc::ServerContext* context) {
    ++calls_;
    std::unique_lock<std::mutex> lock(mu_);
    while (!released_ && !context->IsCancelled())
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "released");
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::atomic<int> calls_{0};
};

HangingRegistry::HangingRegistry() : service_(std::make_unique<Service>()) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ <= 0)
    throw Error("HangingRegistry: no gRPC server on 127.0.0.1:0");
}

HangingRegistry::~HangingRegistry() { shutdown(); }

int HangingRegistry::calls() const { return service_->calls(); }

void HangingRegistry::release() { service_->release(); }

void HangingRegistry::shutdown() {
  release();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

SilentServer::SilentServer() : service_(std::make_unique<grpc::AsyncGenericService>()) {
  grpc::ServerBuilder builder;
  builder.RegisterAsyncGenericService(service_.get());  // calls wait for a RequestCall never made
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
  cq_ = builder.AddCompletionQueue();
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ <= 0) throw Error("SilentServer: no gRPC server on 127.0.0.1:0");
}

SilentServer::~SilentServer() {
  server_->Shutdown(std::chrono::system_clock::now());
  cq_->Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq_->Next(&tag, &ok)) {
  }
}

}  // namespace chessrl::testing
