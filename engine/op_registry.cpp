#include "engine/op_registry.h"

#include <algorithm>

namespace mvkv::engine {

void OpRegistry::add(Session* session) {
    std::lock_guard<std::mutex> g(mutex_);
    sessions_.push_back(session);
}

void OpRegistry::remove(Session* session, const OpTally& tally) {
    std::lock_guard<std::mutex> g(mutex_);
    std::erase(sessions_, session);
    for (int i = 0; i < OpTally::kCount; ++i)
        closed_.counters[i] += tally.get(OpTally::Counter(i));
}

}  // namespace mvkv::engine
