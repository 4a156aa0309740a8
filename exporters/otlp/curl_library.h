// libcurl, loaded by the first OTLP/HTTP transport instead of at start-up. libcurl and what
// Debian's build of it links (GnuTLS, nettle, p11-kit, Kerberos, LDAP, SSH, RTMP, …) add
// megabytes to the daemon's resident set once mapped (their constructors run and touch their
// pages, as /proc/<pid>/smaps shows), and only an OTLP/HTTP export uses any of it: a
// daemon without one never maps them. The container image carries the library all the same
// (deploy/image/build_image.py adds kCurlSoname and its dependencies).
#pragma once

#include <curl/curl.h>

#include "base/status.h"

namespace statlet::otlp {

inline constexpr char kCurlSoname[] = "libcurl.so.4";

// The libcurl functions statlet calls, resolved from the loaded library.
struct CurlLibrary {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_reset) easy_reset;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_multi_init) multi_init;
  decltype(&::curl_multi_cleanup) multi_cleanup;
  decltype(&::curl_multi_add_handle) multi_add_handle;
  decltype(&::curl_multi_remove_handle) multi_remove_handle;
  decltype(&::curl_multi_perform) multi_perform;
  decltype(&::curl_multi_poll) multi_poll;
  decltype(&::curl_multi_wakeup) multi_wakeup;
  decltype(&::curl_multi_info_read) multi_info_read;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
  decltype(&::curl_getdate) getdate;
};

// The process's libcurl: loaded and initialised (curl_global_init) by the first call, the
// same afterwards; an error naming the library or the symbol it lacks otherwise. Any thread.
StatusOr<const CurlLibrary*> Curl();

}  // namespace statlet::otlp
