// The NodeImagePulls writer sends the service account's bearer token: never over plain
// HTTP. The refusal is the API client's (base/kube_api_client.h), so the writer and the
// flags that name an API server all inherit it; only a test may opt in.
#include <gtest/gtest.h>

#include "base/kube_api_client.h"
#include "cmd/daemon_options.h"
#include "pulls/status_writer.h"

namespace statlet::pulls {
namespace {

TEST(StatusWriter, RefusesAPlainHttpApiServer) {
  StatusWriterOptions o;
  o.url = "http://127.0.0.1:6443";
  o.node_name = "node-a";
  auto w = StatusWriter::Create(o);
  ASSERT_FALSE(w.ok()) << "a writer that would send its bearer token in clear text was created";
  EXPECT_NE(w.status().message().find("clear text"), std::string::npos) << w.status().ToString();

  o.url = "https://127.0.0.1:6443";
  EXPECT_TRUE(StatusWriter::Create(o).ok()) << "https is what the writer is for";
}

TEST(StatusWriter, PlainHttpIsReachableOnlyThroughTheTestOption) {
  KubeApiOptions plain{.url = "http://127.0.0.1:6443"};
  EXPECT_FALSE(KubeApiClient::Create(plain).ok());
  plain.allow_plain_http = true;
  EXPECT_TRUE(KubeApiClient::Create(plain).ok());
  // No flag carries an http:// API server into the daemon.
  for (const char* flag : {"--pull.apiserver=http://127.0.0.1:6443", "--web.auth.apiserver=http://127.0.0.1:6443"}) {
    DaemonOptions d;
    EXPECT_FALSE(ParseDaemonOptions({flag}, &d).ok()) << flag << " was accepted";
  }
}

}  // namespace
}  // namespace statlet::pulls
