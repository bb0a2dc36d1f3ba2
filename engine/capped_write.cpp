// Session::writeCapped: a write to a capped collection and the evictions it
// causes, in one implicit transaction (engine/capped_state.h has the order
// and the serialisation; docs/architecture.md, "Capped collections").
#include <fmt/format.h>

#include <mutex>

#include "engine/capped_state.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "engine/implicit_write.h"
#include "util/printable.h"

namespace mvkv::engine {
Status Session::writeCapped(WriteOp op, Collection& coll, std::string_view key,
                            std::string_view value) {
    CappedState& capped = *coll.capped();
    // As in MongoDB: a transaction could hold evictions for long and would
    // make the order depend on when it commits, so capped writes are single
    // operations.
    if (explicit_)
        return Status::IllegalOperation(fmt::format(
            "cannot write to capped collection {} inside a transaction; write it outside one",
            coll.ns().ns()));
    const auto entryBytes = static_cast<int64_t>(key.size() + value.size());
    if (op != WriteOp::kRemove && entryBytes > capped.options().cappedSizeBytes)
        return Status::InvalidArgument(fmt::format(
            "key '{}' and its value are {} bytes, more than capped collection {}'s cap of {} "
            "bytes",
            printable(key), entryBytes, coll.ns().ns(), capped.options().cappedSizeBytes));
    std::lock_guard serial(capped.writeMutex());
    if (capped.stale()) {
        auto pin = engine_.epochs_.pin();
        capped.rebuild(coll.tree(), engine_.epochs_);
    }
    std::vector<std::string> victims;
    bool committing = false;
    Status s = implicitWrite([&]() -> Status {
        victims.clear();
        Status w = applyWrite(op, coll, key, value);
        if (w.ok() && op != WriteOp::kRemove) {
            victims = capped.victimsFor(key, entryBytes);
            for (const std::string& victim : victims)
                if (w = applyWrite(WriteOp::kRemove, coll, victim, {}); !w.ok())
                    break;
        }
        committing = w.ok();  // implicitWrite commits next
        return w;
    });
    if (!s.ok()) {
        // A failed commit may have reached the log (an I/O error): read the
        // order back from the data rather than guess.
        if (committing)
            capped.markStale();
        return s;
    }
    for (const std::string& victim : victims)
        capped.erase(victim);
    curOp_.add(curOp_.keysDeleted, victims.size());
    curOp_.add(op == WriteOp::kRemove ? curOp_.keysDeleted : curOp_.keysInserted);
    if (op == WriteOp::kRemove)
        capped.erase(key);
    else
        capped.noteWrite(key, lastCommitTs_, entryBytes);
    return Status::OK();
}

}  // namespace mvkv::engine
