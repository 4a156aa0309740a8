// ToGrpc (base/grpc_status.h): every statlet code maps to the gRPC code of the same meaning,
// with its message unchanged.
#include "base/grpc_status.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace statlet {
namespace {

TEST(ToGrpc, EveryCodeMapsToTheGrpcCodeOfTheSameMeaning) {
  const std::vector<std::pair<StatusCode, grpc::StatusCode>> cases = {
      {StatusCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
      {StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND},
      {StatusCode::kGone, grpc::StatusCode::NOT_FOUND},
      {StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
      {StatusCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
      {StatusCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED},
      {StatusCode::kInternal, grpc::StatusCode::INTERNAL},
      {StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
  };
  for (const auto& [from, to] : cases) {
    const grpc::Status g = ToGrpc(Status(from, "why it failed"));
    EXPECT_EQ(g.error_code(), to) << StatusCodeName(from);
    EXPECT_EQ(g.error_message(), "why it failed") << StatusCodeName(from);
  }
}

TEST(ToGrpc, OkIsOkWithoutAMessage) {
  const grpc::Status g = ToGrpc(Status::Ok());
  EXPECT_TRUE(g.ok());
  EXPECT_EQ(g.error_message(), "");
}

TEST(ToGrpc, AFullBoundIsResourceExhaustedWhateverItsMessageSays) {
  // The code, not the wording, says the caller may come back later.
  EXPECT_EQ(ToGrpc(ResourceExhausted("the token store is full")).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(ToGrpc(Unavailable("too many sockets: the runtime is down")).error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace statlet
