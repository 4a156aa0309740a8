// Writes a large text into a string through a raw cursor. A hot loop reserves room for a whole
// line once and writes its pieces with memcpy; the string is grown a block at a time (the
// zero fill of each block lands in cache just before it is overwritten) and cut to what was
// written when the writer goes. (std::string::append checks capacity and calls out of line
// for every piece: at ~300 bytes in 6 pieces per series that was a fifth of the encoder's
// time.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace statlet {

class StagedText {
 public:
  static constexpr size_t kBlock = 64 * 1024;

  // Writes from offset `start` on: what *out holds beyond it is overwritten, so a repeat
  // build of the same size into the same string fills nothing and grows nothing.
  StagedText(std::string* out, size_t start)
      : out_(*out), p_(out_.data() + std::min(start, out_.size())), end_(out_.data() + out_.size()) {}
  ~StagedText() { out_.resize(static_cast<size_t>(p_ - out_.data())); }
  StagedText(const StagedText&) = delete;
  StagedText& operator=(const StagedText&) = delete;

  // Room for n bytes at the returned cursor; Commit() the new end.
  char* Reserve(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) [[unlikely]]
      Grow(n);
    return p_;
  }
  void Commit(char* end) { p_ = end; }
  static char* Put(char* p, std::string_view s) {
    if (s.empty()) return p;  // an empty view's data() may be null: no memcpy from it
    std::memcpy(p, s.data(), s.size());
    return p + s.size();
  }
  void Append(std::string_view s) { Commit(Put(Reserve(s.size()), s)); }

 private:
  void Grow(size_t n) {
    const size_t used = static_cast<size_t>(p_ - out_.data());
    out_.resize(used + std::max(n, kBlock));
    p_ = out_.data() + used;
    end_ = out_.data() + out_.size();
  }

  std::string& out_;
  char* p_;
  char* end_;
};

}  // namespace statlet
