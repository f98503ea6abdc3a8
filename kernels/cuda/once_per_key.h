#pragma once
// A value asked of the CUDA driver once per process and key (a kernel's occupancy, its attributes,
// a cluster capacity), kept for every later launch: those calls are host round trips that would
// otherwise sit in every decode step. Thread-safe; `make` runs under the lock, once per key.
#include <map>
#include <mutex>

namespace hipstudio::gpu {

template <class Key, class Value>
class OncePerKey {
 public:
  template <class Make>
  Value get(const Key& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = known_.find(key);
    if (it == known_.end()) it = known_.emplace(key, make()).first;
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<Key, Value> known_;
};

}  // namespace hipstudio::gpu
