// FencingTokens: the fencing tokens of each lock collection — strictly
// increasing, surviving restarts, reaching replicas (docs/document-locks.md,
// "Fencing tokens").
//
// As a database sequence caches its values: tokens are handed out from
// memory, within a block whose upper end (the high-water mark) was first
// committed under the owner index's key kFencingMarkKey, in a transaction
// of its own. A restart starts above the stored mark, so no token handed
// out before is ever handed out again; a block's unused tokens are skipped.
//
// Why a later holder of the same lock always has a larger token: an
// acquisition takes its token inside its transaction, after its snapshot
// began, and commits only if no other acquisition of that key committed
// after that snapshot (write conflicts); every earlier holder therefore took
// its token before this one did.
//
// Thread safety: every method may be called from any thread. take() never
// blocks on anything but a short mutex, so a caller inside a transaction
// (holding intent locks) may call it; refill() writes, so its caller must
// not be in a transaction.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "util/status.h"

namespace mvkv::engine {

class Session;

class FencingTokens {
  public:
    /// Tokens reserved by one high-water mark write.
    static constexpr uint64_t kBlock = 1024;

    /// The next token of lock collection `lockNs`; nullopt when its block is
    /// used up or not loaded yet (refill() first).
    std::optional<uint64_t> take(std::string_view lockNs);
    /// Loads the stored mark (once) and commits a higher one, one block up,
    /// through `session` (no transaction open) in the owner index
    /// `ownersNs`. The errors of Session::get/put (NamespaceNotFound when
    /// the owner index was dropped meanwhile); Corruption for a mark that is
    /// not a number.
    Status refill(Session& session, std::string_view lockNs, std::string_view ownersNs);
    /// How many marks were committed (serverStatus).
    uint64_t marksWritten() const;

  private:
    struct Sequence {
        std::mutex mutex;       // guards next and limit
        bool loaded = false;    // GUARDED_BY(mutex)
        uint64_t next = 1;      // GUARDED_BY(mutex)
        uint64_t limit = 0;     // GUARDED_BY(mutex): the committed mark
        std::mutex raiseMutex;  // one mark write at a time, never held by take()
    };
    Sequence& sequence(std::string_view lockNs);

    mutable std::mutex mapMutex_;
    std::unordered_map<std::string, std::unique_ptr<Sequence>> sequences_;  // GUARDED_BY(mapMutex_)
    uint64_t marksWritten_ = 0;                                             // GUARDED_BY(mapMutex_)
};

}  // namespace mvkv::engine
