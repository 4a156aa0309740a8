#include "exporters/kept_text.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace statlet {
namespace {

// Retired chunks are kept for reuse up to this many, or up to as many bytes as are live:
// an encode that renders everything again (every value moved) retires as much as it opens,
// and chunks freed and allocated anew would cost page faults on every one of their pages.
constexpr size_t kMinSpare = 4;

}  // namespace

void TextRope::AppendTo(std::string* out) const {
  out->reserve(out->size() + size);
  for (std::string_view p : pieces) out->append(p);
}

std::string TextRope::ToString() const {
  std::string s;
  AppendTo(&s);
  return s;
}

KeptText::KeptText(size_t chunk_bytes) : chunk_bytes_(chunk_bytes) {}
KeptText::~KeptText() = default;

KeptText::ChunkId KeptText::Open(size_t min_capacity) {
  std::shared_ptr<Chunk> chunk;
  for (size_t i = 0; i < spare_.size(); ++i) {
    if (spare_[i].use_count() == 1 && spare_[i]->capacity >= min_capacity) {
      chunk = std::move(spare_[i]);
      spare_bytes_ -= chunk->capacity;
      spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  if (!chunk) {
    chunk = std::make_shared<Chunk>();
    chunk->capacity = std::max(min_capacity, chunk_bytes_);
    chunk->data.reset(new char[chunk->capacity]);  // not zeroed: every byte read was written
  }
  chunk->used = 0;
  chunk->live = 0;
  chunk->evacuate = false;
  capacity_ += chunk->capacity;
  ChunkId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
    bases_[id] = chunk->data.get();
    chunks_[id] = std::move(chunk);
  } else {
    id = static_cast<ChunkId>(chunks_.size());
    if (id >= kNoChunk) std::abort();  // unreachable under the text cap (prometheus_kept.cc)
    bases_.push_back(chunk->data.get());
    chunks_.push_back(std::move(chunk));
  }
  return id;
}

void KeptText::Retire(ChunkId c) {
  std::shared_ptr<Chunk>& chunk = chunks_[c];
  capacity_ -= chunk->capacity;
  if (spare_.size() < kMinSpare || spare_bytes_ + chunk->capacity <= live_) {
    spare_bytes_ += chunk->capacity;
    spare_.push_back(std::move(chunk));
  }
  chunk.reset();
  free_ids_.push_back(c);
  if (open_ == c) {
    open_ = kNoChunk;
    open_chunk_ = nullptr;
  }
}

void KeptText::Start() {
  if (open_ == kNoChunk) open_ = Open(chunk_bytes_);
  Chunk& c = *chunks_[open_];
  open_chunk_ = &c;
  begin_ = p_ = c.data.get() + c.used;
  end_ = c.data.get() + c.capacity;
}

void KeptText::Grow(size_t n) {
  const size_t written = static_cast<size_t>(p_ - begin_);
  const ChunkId next = Open(written + n);
  Chunk& c = *chunks_[next];
  if (written) std::memcpy(c.data.get(), begin_, written);
  open_ = next;
  open_chunk_ = &c;
  begin_ = c.data.get();
  p_ = begin_ + written;
  end_ = begin_ + c.capacity;
}

void KeptText::Append(std::string_view s) {
  char* p = Reserve(s.size());
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  Commit(p + s.size());
}

void KeptText::Collect() {
  size_t waste = 0;
  any_evacuating_ = false;
  p_ = begin_ = end_ = nullptr;  // the next Begin looks at the open chunk again
  for (ChunkId id = 0; id < chunks_.size(); ++id) {
    Chunk* c = chunks_[id].get();
    if (c == nullptr) continue;
    if (c->live == 0) {
      if (id != open_) {
        Retire(id);
        continue;
      }
      if (chunks_[id].use_count() == 1) c->used = 0;  // no rope reads it: write it again from the start
    }
    any_evacuating_ |= c->evacuate;
    waste += (id == open_ ? c->used : c->capacity) - c->live;
  }
  // Dead bytes past a quarter of the live ones: the sparsest chunks (under half live) are
  // evacuated by the next encode, sparsest first, until what stays dead is under that bound.
  const size_t bound = live_ / 4 + 2 * chunk_bytes_;
  if (waste <= bound) return;
  std::vector<ChunkId>& sparse = sparse_;
  sparse.clear();
  for (ChunkId id = 0; id < chunks_.size(); ++id) {
    const Chunk* c = chunks_[id].get();
    if (c != nullptr && id != open_ && !c->evacuate && c->live * 2 < c->capacity) sparse.push_back(id);
  }
  std::sort(sparse.begin(), sparse.end(), [&](ChunkId a, ChunkId b) {
    return chunks_[a]->live * chunks_[b]->capacity < chunks_[b]->live * chunks_[a]->capacity;
  });
  for (ChunkId id : sparse) {
    if (waste <= bound) break;
    Chunk& c = *chunks_[id];
    c.evacuate = true;
    any_evacuating_ = true;
    waste -= c.capacity - c.live;
  }
}

void KeptText::HoldAll(std::vector<std::shared_ptr<const void>>* holds) const {
  for (const std::shared_ptr<Chunk>& c : chunks_) {
    if (c) holds->push_back(c);
  }
}

}  // namespace statlet
