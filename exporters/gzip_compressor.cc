#include "exporters/gzip_compressor.h"

namespace statlet {

GzipCompressor::GzipCompressor(int level) : level_(level) {}

GzipCompressor::~GzipCompressor() {
  if (ready_) deflateEnd(&stream_);
}

// zlib's state (~270 KB: window, hash chains, pending buffer) is allocated at the first
// use: a daemon nobody scrapes, or scrapes without gzip, never holds it.
bool GzipCompressor::Ready() {
  // windowBits 15 + 16 selects the gzip wrapper; memLevel 8 is zlib's default.
  if (!ready_) ready_ = deflateInit2(&stream_, level_, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  return ready_;
}

Status GzipCompressor::Compress(std::string_view in, std::string* out) {
  if (!Ready()) return Internal("zlib deflateInit2 failed");
  if (deflateReset(&stream_) != Z_OK) return Internal("zlib deflateReset failed");
  out->resize(deflateBound(&stream_, in.size()));
  stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  stream_.avail_in = static_cast<uInt>(in.size());
  stream_.next_out = reinterpret_cast<Bytef*>(out->data());
  stream_.avail_out = static_cast<uInt>(out->size());
  int rc = deflate(&stream_, Z_FINISH);
  if (rc != Z_STREAM_END) return Internal("zlib deflate did not finish: " + std::to_string(rc));
  out->resize(stream_.total_out);
  return Status::Ok();
}

Status GzipCompressor::CompressHead(std::string_view in, std::string* out) {
  head_ready_ = false;
  if (!Ready()) return Internal("zlib deflateInit2 failed");
  if (deflateReset(&stream_) != Z_OK) return Internal("zlib deflateReset failed");
  // deflateBound covers a finished stream; a full flush adds at most a few bytes more.
  out->resize(deflateBound(&stream_, in.size()) + 16);
  stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  stream_.avail_in = static_cast<uInt>(in.size());
  stream_.next_out = reinterpret_cast<Bytef*>(out->data());
  stream_.avail_out = static_cast<uInt>(out->size());
  int rc = deflate(&stream_, Z_FULL_FLUSH);
  if (rc != Z_OK || stream_.avail_in != 0) return Internal("zlib deflate (flush) failed: " + std::to_string(rc));
  out->resize(stream_.total_out);
  head_ready_ = true;
  return Status::Ok();
}

Status GzipCompressor::CompressHead(std::span<const std::string_view> head, std::string* out) {
  head_ready_ = false;
  if (!Ready()) return Internal("zlib deflateInit2 failed");
  if (deflateReset(&stream_) != Z_OK) return Internal("zlib deflateReset failed");
  size_t total = 0;
  for (std::string_view p : head) total += p.size();
  out->resize(deflateBound(&stream_, total) + 16);
  stream_.next_out = reinterpret_cast<Bytef*>(out->data());
  stream_.avail_out = static_cast<uInt>(out->size());
  for (std::string_view p : head) {
    if (p.empty()) continue;
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p.data()));
    stream_.avail_in = static_cast<uInt>(p.size());
    int rc = deflate(&stream_, Z_NO_FLUSH);
    if (rc != Z_OK || stream_.avail_in != 0) return Internal("zlib deflate failed: " + std::to_string(rc));
  }
  int rc = deflate(&stream_, Z_FULL_FLUSH);
  if (rc != Z_OK) return Internal("zlib deflate (flush) failed: " + std::to_string(rc));
  out->resize(stream_.total_out);
  head_ready_ = true;
  return Status::Ok();
}

Status GzipCompressor::FinishTail(std::string_view in, std::string* out) {
  if (!head_ready_) return Internal("gzip tail without a head");
  z_stream copy{};
  if (deflateCopy(&copy, &stream_) != Z_OK) return Internal("zlib deflateCopy failed");
  out->resize(deflateBound(&copy, in.size()) + 32);
  copy.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  copy.avail_in = static_cast<uInt>(in.size());
  copy.next_out = reinterpret_cast<Bytef*>(out->data());
  copy.avail_out = static_cast<uInt>(out->size());
  const uLong before = copy.total_out;
  int rc = deflate(&copy, Z_FINISH);
  const uLong written = copy.total_out - before;
  deflateEnd(&copy);
  if (rc != Z_STREAM_END) return Internal("zlib deflate did not finish: " + std::to_string(rc));
  out->resize(written);
  return Status::Ok();
}

StatusOr<std::string> GunzipForTest(std::string_view in) {
  z_stream s{};
  if (inflateInit2(&s, 15 + 16) != Z_OK) return Internal("inflateInit2 failed");
  std::string out;
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  s.avail_in = static_cast<uInt>(in.size());
  char buf[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    s.next_out = reinterpret_cast<Bytef*>(buf);
    s.avail_out = sizeof buf;
    rc = inflate(&s, Z_NO_FLUSH);
    out.append(buf, sizeof buf - s.avail_out);
  }
  inflateEnd(&s);
  if (rc != Z_STREAM_END) return StatusOr<std::string>(Status(StatusCode::kDataLoss, "bad gzip stream"));
  return out;
}

}  // namespace statlet
