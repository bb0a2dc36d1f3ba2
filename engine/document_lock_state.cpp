#include "engine/document_lock_state.h"

#include "engine/json_text.h"

namespace mvkv::engine {

std::string DocumentLockState::statusJson() const {
    std::string out;
    JsonText j(&out);
    auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    j.begin();
    j.field("acquired", get(counters.acquired));
    j.field("denied", get(counters.denied));
    j.field("waits", get(counters.waits));
    j.field("takeovers", get(counters.takeovers));
    j.field("released", get(counters.released));
    j.field("refreshed", get(counters.refreshed));
    j.field("lockLost", get(counters.lockLost));
    j.field("fencingMarksWritten", tokens.marksWritten());
    j.end();
    return out;
}

}  // namespace mvkv::engine
