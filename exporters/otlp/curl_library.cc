#include "exporters/otlp/curl_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace statlet::otlp {
namespace {

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (*out == nullptr && missing->empty()) *missing = name;
  return *out != nullptr;
}

StatusOr<const CurlLibrary*> Load() {
  // Never closed: the transports that use it live as long as the process.
  void* h = ::dlopen(kCurlSoname, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = ::dlerror();
    return Unavailable(std::string("OTLP over HTTP needs ") + kCurlSoname +
                       " (Debian: libcurl4): " + (e ? e : "not found"));
  }
  static CurlLibrary lib;
  std::string missing;
  Resolve(h, "curl_global_init", &lib.global_init, &missing);
  Resolve(h, "curl_easy_init", &lib.easy_init, &missing);
  Resolve(h, "curl_easy_cleanup", &lib.easy_cleanup, &missing);
  Resolve(h, "curl_easy_reset", &lib.easy_reset, &missing);
  Resolve(h, "curl_easy_setopt", &lib.easy_setopt, &missing);
  Resolve(h, "curl_easy_getinfo", &lib.easy_getinfo, &missing);
  Resolve(h, "curl_easy_strerror", &lib.easy_strerror, &missing);
  Resolve(h, "curl_multi_init", &lib.multi_init, &missing);
  Resolve(h, "curl_multi_cleanup", &lib.multi_cleanup, &missing);
  Resolve(h, "curl_multi_add_handle", &lib.multi_add_handle, &missing);
  Resolve(h, "curl_multi_remove_handle", &lib.multi_remove_handle, &missing);
  Resolve(h, "curl_multi_perform", &lib.multi_perform, &missing);
  Resolve(h, "curl_multi_poll", &lib.multi_poll, &missing);
  Resolve(h, "curl_multi_wakeup", &lib.multi_wakeup, &missing);
  Resolve(h, "curl_multi_info_read", &lib.multi_info_read, &missing);
  Resolve(h, "curl_slist_append", &lib.slist_append, &missing);
  Resolve(h, "curl_slist_free_all", &lib.slist_free_all, &missing);
  Resolve(h, "curl_getdate", &lib.getdate, &missing);
  if (!missing.empty()) {
    // curl_multi_poll and curl_multi_wakeup came with libcurl 7.66 and 7.68.
    return Unavailable(std::string(kCurlSoname) + " lacks " + missing + " (libcurl 7.68 or later is needed)");
  }
  if (CURLcode rc = lib.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
    return Unavailable("curl_global_init failed: " + std::string(lib.easy_strerror(rc)));
  }
  return static_cast<const CurlLibrary*>(&lib);
}

}  // namespace

StatusOr<const CurlLibrary*> Curl() {
  static const StatusOr<const CurlLibrary*> loaded = Load();  // thread-safe once
  return loaded;
}

}  // namespace statlet::otlp
