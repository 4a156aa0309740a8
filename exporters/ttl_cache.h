// A bounded map whose entries expire: the least recently used entry makes room for a new
// one, and an expired entry is still found (marked so) until it is replaced or pushed
// out. The caller passes the time; the cache never reads a clock. Not thread-safe.
#pragma once

#include <chrono>
#include <list>
#include <unordered_map>
#include <utility>

namespace statlet {

template <class Key, class Value, class Hash = std::hash<Key>>
class TtlCache {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TtlCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  struct Found {
    const Value* value = nullptr;  // null: no entry
    bool fresh = false;            // not expired at the time asked
  };
  Found Get(const Key& key, Clock::time_point now) {
    auto it = index_.find(key);
    if (it == index_.end()) return {};
    order_.splice(order_.begin(), order_, it->second);  // most recently used first
    const Entry& e = *it->second;
    return {&e.value, now < e.expires};
  }

  void Put(const Key& key, Value value, Clock::time_point expires) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      it->second->value = std::move(value);
      it->second->expires = expires;
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    if (index_.size() >= capacity_) {
      index_.erase(order_.back().key);
      order_.pop_back();
    }
    order_.push_front(Entry{key, std::move(value), expires});
    index_.emplace(key, order_.begin());
  }

  void Erase(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    order_.erase(it->second);
    index_.erase(it);
  }

  size_t size() const { return index_.size(); }

 private:
  struct Entry {
    Key key;
    Value value;
    Clock::time_point expires;
  };
  size_t capacity_;
  std::list<Entry> order_;
  std::unordered_map<Key, typename std::list<Entry>::iterator, Hash> index_;
};

}  // namespace statlet
