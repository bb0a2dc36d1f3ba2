#include "oplog/oplog_cursor.h"

namespace mvkv::oplog {

OplogCursor::OplogCursor(Oplog& oplog, OplogCursorOptions options)
    : oplog_(oplog),
      options_(std::move(options)),
      position_{options_.from == mvcc::kNoTimestamp ? 0 : options_.from - 1, UINT64_MAX},
      fromStart_(options_.from == mvcc::kNoTimestamp) {}

bool OplogCursor::matches(const OplogEntry& e) const {
    const std::string& ns = options_.ns;
    if (ns.empty() || e.ns == ns)
        return true;
    // A database filter takes its collections ("db.x") and its commands ("db").
    return ns.find('.') == std::string::npos && e.ns.size() > ns.size() &&
           e.ns.compare(0, ns.size(), ns) == 0 && e.ns[ns.size()] == '.';
}

Status OplogCursor::next(std::vector<OplogEntry>* out, size_t maxEntries,
                         std::chrono::milliseconds wait) {
    if (!lost_.ok())
        return lost_;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    const size_t before = out->size();
    while (true) {
        refs_.clear();
        mvcc::Timestamp visible = oplog_.visibleTs();
        Status s = oplog_.recordsAfter(position_, fromStart_, visible,
                                       std::max<size_t>(1, maxEntries), &refs_);
        if (!s.ok()) {
            if (s.code() == StatusCode::kCappedPositionLost)
                lost_ = s;
            return s;
        }
        size_t taken = 0;
        for (const RecordRef& ref : refs_) {
            if (taken > 0 && taken + ref.entries > maxEntries)
                break;
            if (Status r = oplog_.readRecord(ref, &payload_); !r.ok())
                return r;
            if (Status d = decodeEntries(payload_, &decoded_); !d.ok())
                return d;
            // A prepare (or its abort) is recovery's alone: the writes reach
            // readers as the commit record, at the commit timestamp.
            if (preparedRecordKind(decoded_) != PreparedRecord::kNone)
                decoded_.clear();
            takePreparedDurableTs(&decoded_);  // a prepared commit's marker
            for (OplogEntry& e : decoded_)
                if (matches(e))
                    out->push_back(std::move(e));
            taken += ref.entries;
            position_ = ref.key;
            fromStart_ = false;
        }
        if (out->size() > before)
            return Status::OK();
        // Nothing (or nothing that matched): wait for the visible point to
        // move, unless the time is up.
        if (refs_.empty() || taken == 0) {
            if (std::chrono::steady_clock::now() >= deadline)
                return Status::OK();
            oplog_.waitVisibleAfter(visible, deadline);
        }
    }
}

}  // namespace mvkv::oplog
