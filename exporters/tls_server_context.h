// The OpenSSL server context of the web config's tls_server_config: TLS 1.2 or newer, no
// renegotiation, the certificate chain and key (checked to belong together), and client
// certificates required and verified against client_ca_file when one is given. Every
// error names the file and says why (the OS's or OpenSSL's reason).
#pragma once

#include <openssl/ssl.h>

#include <memory>

#include "base/status.h"
#include "exporters/web_config.h"

namespace statlet {

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

StatusOr<SslCtxPtr> MakeTlsServerContext(const WebConfig& web);

}  // namespace statlet
