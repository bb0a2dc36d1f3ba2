// OplogCursor: reads the oplog in timestamp order from a starting
// timestamp, up to the visible timestamp only, and (tailable) waits for
// more: the base of change streams and of a replica (replication/replica.h).
//
// Each call returns whole records (a transaction's entries together, even
// when that passes maxEntries), filtered by namespace. A reader that fell
// behind capping gets CappedPositionLost and stays lost.
//
// Thread safety: one thread per cursor; any number of cursors at once. The
// cursor must not outlive its Oplog.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "oplog/oplog.h"

namespace mvkv::oplog {

struct OplogCursorOptions {
    /// Entries with a timestamp >= from; 0: from the oldest entry there is.
    mvcc::Timestamp from = mvcc::kNoTimestamp;
    /// "" (everything), a database ("app": its collections and commands on
    /// it) or a collection ("app.users").
    std::string ns;
};

class OplogCursor {
  public:
    OplogCursor(Oplog& oplog, OplogCursorOptions options);

    /// Appends the next visible entries to *out (at most about
    /// `maxEntries`). When none are visible yet, waits up to `wait` for
    /// some; on timeout returns OK with nothing appended.
    /// CappedPositionLost, IOError or Corruption otherwise.
    Status next(std::vector<OplogEntry>* out, size_t maxEntries = 1000,
                std::chrono::milliseconds wait = std::chrono::milliseconds(0));
    /// The timestamp of the newest record read (0 before the first).
    mvcc::Timestamp lastTs() const { return position_.ts; }

  private:
    bool matches(const OplogEntry& e) const;

    Oplog& oplog_;
    const OplogCursorOptions options_;
    RecordKey position_;
    bool fromStart_;
    Status lost_;
    std::vector<RecordRef> refs_;
    std::vector<OplogEntry> decoded_;
    std::string payload_;
};

}  // namespace mvkv::oplog
