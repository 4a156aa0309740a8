// Memory a client can make the daemon spend before anyone knows who it is: a header
// block, a chunked body, a compressed body. The caps apply while reading, the answer is
// an error and a close, and neither the resident set nor its peak grows by more than
// 10 MiB (the DaemonSet's limit is 128 MiB).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/statlet_daemon.h"

namespace statlet::testing {
namespace {

constexpr uint64_t kMaxGrowthKib = 10 * 1024;

// Peak and final RSS growth over `attack`, from a warm daemon.
struct Growth {
  uint64_t peak_kib = 0;
  uint64_t rss_kib = 0;
};

template <typename Attack>
Growth Measure(Daemon& d, Attack attack) {
  // Warm: a scrape has allocated what a scrape allocates.
  TimedGet(d.port(), "/metrics");
  const ProcessCost before = CostOf(d.pid());
  EXPECT_TRUE(ResetPeakRss(d.pid()));
  attack();
  TimedGet(d.port(), "/healthz");
  const ProcessCost after = CostOf(d.pid());
  Growth g;
  g.peak_kib = after.peak_rss_kib > before.rss_kib ? after.peak_rss_kib - before.rss_kib : 0;
  g.rss_kib = after.rss_kib > before.rss_kib ? after.rss_kib - before.rss_kib : 0;
  return g;
}

void ExpectBounded(const Growth& g, const char* what) {
  std::printf("figure: %s: peak RSS +%.1f MiB, RSS after +%.1f MiB\n", what, g.peak_kib / 1024.0, g.rss_kib / 1024.0);
  if (kSanitizedBuild) return;  // the sanitizer's quarantine holds freed memory
  EXPECT_LT(g.peak_kib, kMaxGrowthKib) << what;
  EXPECT_LT(g.rss_kib, kMaxGrowthKib) << what;
}

// Sends `head` and then `size` bytes made by `next`, stopping when the server stops
// reading or closes; the answer, if one came.
std::optional<RawResponse> Push(int port, const std::string& head, size_t size,
                                const std::function<std::string(size_t)>& next) {
  TcpConnection c(port);
  if (!c.ok() || !c.Send(head)) return std::nullopt;
  for (size_t sent = 0; sent < size;) {
    std::string piece = next(sent);
    if (!c.Send(piece, Millis(3000))) break;  // the server closed or stopped reading
    sent += piece.size();
  }
  return c.ReadResponse(Millis(3000));
}

std::string ShortHeaders(size_t) {
  std::string s;
  for (int i = 0; i < 8192; ++i) s += "X-a: b\r\n";
  return s;
}

TEST(HttpMemory, HeaderBlockIsCappedWhileReading) {
  Daemon d;
  ASSERT_TRUE(d.ok()) << d.error();
  std::optional<RawResponse> answer;
  Growth one =
      Measure(d, [&] { answer = Push(d.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n", 16 << 20, ShortHeaders); });
  ExpectBounded(one, "one GET with 16 MB of short headers");
  ASSERT_TRUE(answer.has_value()) << "no answer to an oversized header block";
  EXPECT_EQ(answer->status, 431);
  Growth four = Measure(d, [&] {
    std::vector<std::thread> t;
    for (int i = 0; i < 4; ++i) {
      t.emplace_back([&] { Push(d.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n", 16 << 20, ShortHeaders); });
    }
    for (auto& th : t) th.join();
  });
  ExpectBounded(four, "four such GETs in parallel");
}

TEST(HttpMemory, ChunkedBodyIsCappedWhileReading) {
  Daemon d({.flags = {"--web.max-request-bytes=65536"}});
  ASSERT_TRUE(d.ok()) << d.error();
  const std::string chunk = "10000\r\n" + std::string(0x10000, 'a') + "\r\n";
  std::optional<RawResponse> answer;
  Growth g = Measure(d, [&] {
    answer = Push(d.port(), "POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 160 << 20,
                  [&](size_t) { return chunk; });
  });
  ExpectBounded(g, "a chunked POST of 160 MB");
  ASSERT_TRUE(answer.has_value()) << "no answer to a chunked body of 160 MB";
  EXPECT_GE(answer->status, 400);
  Growth get = Measure(d, [&] {
    answer = Push(d.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 160 << 20,
                  [&](size_t) { return chunk; });
  });
  ExpectBounded(get, "a chunked GET body of 160 MB");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 413);
}

TEST(HttpMemory, CompressedBodiesAreNotInflated) {
  Daemon d;
  ASSERT_TRUE(d.ok()) << d.error();
  // 60 MB of zeros, gzip at level 9: about 60 KB on the wire.
  std::string zeros(60 << 20, '\0');
  std::string gz(compressBound(zeros.size()) + 64, '\0');
  z_stream z{};
  ASSERT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(zeros.data());
  z.avail_in = static_cast<uInt>(zeros.size());
  z.next_out = reinterpret_cast<Bytef*>(gz.data());
  z.avail_out = static_cast<uInt>(gz.size());
  ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  gz.resize(z.total_out);
  deflateEnd(&z);
  zeros.clear();
  zeros.shrink_to_fit();
  std::optional<RawResponse> answer;
  Growth g = Measure(d, [&] {
    for (const char* method : {"POST", "GET"}) {
      answer =
          Push(d.port(),
               std::string(method) + " /metrics HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: " +
                   std::to_string(gz.size()) + "\r\n\r\n",
               gz.size(), [&](size_t) { return gz; });
    }
  });
  char what[96];
  std::snprintf(what, sizeof what, "a %zu KB gzip body inflating to 60 MB", gz.size() / 1000);
  ExpectBounded(g, what);
  ASSERT_TRUE(answer.has_value());
}

}  // namespace
}  // namespace statlet::testing
