#include "exporters/tls_server_context.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace statlet {
namespace {

// OpenSSL's queued errors as "reason; reason", oldest first; emptied.
std::string OpenSslReasons() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    if (!out.empty()) out += "; ";
    out += reason != nullptr ? reason : "error " + std::to_string(e);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

// The OS's reason when the file cannot be opened for reading.
Status Readable(const char* what, const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidArgument(std::string("TLS ") + what + " " + path + ": " + std::strerror(errno));
  ::close(fd);
  return Status::Ok();
}

}  // namespace

StatusOr<SslCtxPtr> MakeTlsServerContext(const WebConfig& web) {
  ERR_clear_error();
  for (const auto& [what, path] : {std::pair<const char*, const std::string*>{"cert_file", &web.cert_file},
                                   {"key_file", &web.key_file},
                                   {"client_ca_file", &web.client_ca_file}}) {
    if (path->empty()) continue;
    if (Status s = Readable(what, *path); !s.ok()) return s;
  }
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return Internal("TLS: cannot create a context: " + OpenSslReasons());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // Renegotiation lets a client make the server repeat handshakes at will.
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), web.cert_file.c_str()) != 1) {
    return InvalidArgument("TLS cert_file " + web.cert_file + ": " + OpenSslReasons());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), web.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return InvalidArgument("TLS key_file " + web.key_file + ": " + OpenSslReasons());
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1) {
    return InvalidArgument("TLS key_file " + web.key_file + " does not match cert_file " + web.cert_file + " (" +
                           OpenSslReasons() + ")");
  }
  if (!web.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), web.client_ca_file.c_str(), nullptr) != 1) {
      return InvalidArgument("TLS client_ca_file " + web.client_ca_file + ": " + OpenSslReasons());
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(web.client_ca_file.c_str());
    if (names == nullptr) {
      return InvalidArgument("TLS client_ca_file " + web.client_ca_file + ": no CA certificate in it (" +
                             OpenSslReasons() + ")");
    }
    SSL_CTX_set_client_CA_list(ctx.get(), names);
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ctx;
}

}  // namespace statlet
