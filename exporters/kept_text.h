// Text kept between encodes, and texts made of it.
//
// KeptText holds segments of text in chunks of bytes that are never changed once written:
// a segment no longer used is only counted dead, and a chunk nothing lives in any more is
// retired, its memory reused once no TextRope holds it. So a rope built from segments stays
// valid however long a response takes to send it, while the next encode writes new
// segments beside it. Dead bytes are bounded: when they pass a quarter of the live ones,
// the sparsest chunks are marked and the next encode moves their live segments out; then
// chunks hold at most twice the live bytes plus two chunks (every chunk at least half
// live). A chunk nothing lives in is retired at once. Retired chunks kept for reuse: four,
// or as many bytes as are live.
//
// Not thread-safe (one encoder writes); the ropes it hands out may be read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/attributes.h"

namespace statlet {

// A text in pieces: views of bytes that do not change, and what keeps them alive.
struct TextRope {
  std::vector<std::string_view> pieces;
  std::vector<std::shared_ptr<const void>> holds;
  size_t size = 0;

  // n bytes at p, joined to the last piece when they follow it in memory.
  STATLET_ALWAYS_INLINE void Append(const char* p, size_t n) {
    if (n == 0) return;
    if (!pieces.empty() && pieces.back().data() + pieces.back().size() == p) {
      pieces.back() = std::string_view(pieces.back().data(), pieces.back().size() + n);
    } else {
      pieces.emplace_back(p, n);
    }
    size += n;
  }
  void Clear() {
    pieces.clear();
    holds.clear();
    size = 0;
  }
  void AppendTo(std::string* out) const;
  std::string ToString() const;
};

class KeptText {
 public:
  // Chunk ids are reused and stay below 2^24 (a chunk holds at least one segment and the
  // text is capped far below that many), so that a user may keep a byte beside one.
  using ChunkId = uint32_t;
  static constexpr ChunkId kNoChunk = 0xFFFFFF;

  // A segment as written: its bytes and the chunk holding them.
  struct Span {
    const char* text = nullptr;
    uint32_t size = 0;
    uint32_t offset = 0;  // of text in its chunk
    ChunkId chunk = kNoChunk;
  };

  explicit KeptText(size_t chunk_bytes = 256 * 1024);
  ~KeptText();
  KeptText(const KeptText&) = delete;
  KeptText& operator=(const KeptText&) = delete;

  // Writes one segment: Begin, then Reserve/Commit as often as needed, then End. A segment
  // begins where the last one ended.
  void Begin() {
    if (p_ == nullptr) [[unlikely]]
      Start();
    begin_ = p_;
  }
  // Room for n bytes at the returned cursor. When the open chunk is full a new one opens
  // and what the segment wrote so far moves into it.
  char* Reserve(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) [[unlikely]]
      Grow(n);
    return p_;
  }
  void Commit(char* p) { p_ = p; }
  // Where the segment goes on (after Begin; at least room() bytes free there).
  char* cursor() const { return p_; }
  // Room left in the open chunk (after Begin).
  size_t room() const { return static_cast<size_t>(end_ - p_); }
  void Append(std::string_view s);
  // The segment's bytes so far (valid until the next Reserve).
  std::string_view written() const { return std::string_view(begin_, static_cast<size_t>(p_ - begin_)); }
  Span End() {
    const auto n = static_cast<uint32_t>(p_ - begin_);
    Span span{begin_, n, static_cast<uint32_t>(begin_ - open_chunk_->data.get()), open_};
    open_chunk_->used = static_cast<size_t>(p_ - open_chunk_->data.get());
    open_chunk_->live += n;
    live_ += n;
    begin_ = p_;
    return span;
  }

  // The bytes at `offset` in chunk `c` (of a segment still in use).
  const char* At(ChunkId c, uint32_t offset) const { return bases_[c] + offset; }
  // n bytes of a segment in chunk `c` are no longer used.
  void Release(ChunkId c, size_t n) {
    Chunk& chunk = *chunks_[c];
    chunk.live -= n;
    live_ -= n;
    // Nothing lives in it any more: reusable at once (by the rest of this encode, once no
    // rope holds it), so that text rendered whole every encode takes the chunks of its last
    // rendering instead of as many again.
    if (chunk.live == 0 && c != open_) [[unlikely]]
      Retire(c);
  }
  // Whether some chunk is being evacuated (then each segment is asked).
  bool any_evacuating() const { return any_evacuating_; }
  bool evacuating(ChunkId c) const { return chunks_[c]->evacuate; }

  // After an encode: retires the chunks nothing lives in, and marks the sparsest chunks for
  // evacuation when dead bytes pass a quarter of the live ones.
  void Collect();
  // Every chunk in use, for a rope whose pieces point into them.
  void HoldAll(std::vector<std::shared_ptr<const void>>* holds) const;

  size_t live_bytes() const { return live_; }
  // Memory of the chunks in use, and of the retired ones kept for reuse.
  size_t capacity_bytes() const { return capacity_; }
  size_t spare_bytes() const { return spare_bytes_; }
  size_t chunk_count() const { return chunks_.size() - free_ids_.size(); }

 private:
  struct Chunk {
    std::unique_ptr<char[]> data;
    size_t capacity = 0;
    size_t used = 0;  // bytes of ended segments (and what was abandoned between them)
    size_t live = 0;  // bytes of segments still in use
    bool evacuate = false;
  };
  void Start();
  void Grow(size_t n);
  ChunkId Open(size_t min_capacity);
  void Retire(ChunkId c);

  std::vector<std::shared_ptr<Chunk>> chunks_;  // by id; null: a free id
  std::vector<const char*> bases_;              // by id: the chunk's bytes
  std::vector<ChunkId> free_ids_;
  std::vector<std::shared_ptr<Chunk>> spare_;  // retired, reusable once no rope holds them
  std::vector<ChunkId> sparse_;                // scratch for Collect
  ChunkId open_ = kNoChunk;
  Chunk* open_chunk_ = nullptr;
  bool any_evacuating_ = false;
  // The segment being written: [begin_, p_), room up to end_; p_ null when the open chunk
  // must be looked at again (none yet, retired, or written again from its start).
  char* begin_ = nullptr;
  char* p_ = nullptr;
  char* end_ = nullptr;
  size_t chunk_bytes_;
  size_t live_ = 0, capacity_ = 0, spare_bytes_ = 0;
};

// Writes one long text into a KeptText as segments that end wherever a chunk fills (so that
// nothing written is ever moved), each appended to a rope and to `spans`.
class KeptTextStream {
 public:
  KeptTextStream(KeptText& text, TextRope& rope, std::vector<KeptText::Span>* spans)
      : text_(text), rope_(rope), spans_(*spans) {
    text_.Begin();
  }
  ~KeptTextStream() { Flush(); }
  KeptTextStream(const KeptTextStream&) = delete;
  KeptTextStream& operator=(const KeptTextStream&) = delete;

  STATLET_ALWAYS_INLINE char* Reserve(size_t n) {
    if (n > text_.room()) [[unlikely]]
      return Refill(n);
    return text_.cursor();
  }
  STATLET_ALWAYS_INLINE void Commit(char* p) { text_.Commit(p); }
  void Append(std::string_view s) {
    if (s.empty()) return;
    text_.Append(s);  // a header or an event line: moved along if the chunk fills (small)
  }

 private:
  // The chunk is full: what was written goes out as a segment, then room in the next chunk.
  char* Refill(size_t n) {
    Flush();
    return text_.Reserve(n);
  }
  void Flush() {
    const KeptText::Span span = text_.End();
    if (span.size) {
      rope_.Append(span.text, span.size);
      spans_.push_back(span);
    }
    text_.Begin();
  }

  KeptText& text_;
  TextRope& rope_;
  std::vector<KeptText::Span>& spans_;
};

}  // namespace statlet
