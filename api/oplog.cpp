// mvkv::OplogCursor and mvkv::ChangeStream over the engine's
// (include/mvkv/oplog.h, include/mvkv/change_stream.h).
#include "api/convert.h"
#include "api/impl.h"

namespace mvkv {

OplogCursor::OplogCursor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OplogCursor::~OplogCursor() = default;

namespace {

OplogOp toPublic(oplog::OpType op) {
    switch (op) {
        case oplog::OpType::kInsert:
            return OplogOp::kInsert;
        case oplog::OpType::kUpdate:
            return OplogOp::kUpdate;
        case oplog::OpType::kDelete:
            return OplogOp::kDelete;
        case oplog::OpType::kCommand:
            break;
    }
    return OplogOp::kCommand;
}

}  // namespace

Status OplogCursor::next(std::vector<OplogEntry>* out, size_t maxEntries,
                         std::chrono::milliseconds wait) {
    std::vector<oplog::OplogEntry>& read = impl_->entries;
    read.clear();
    Status s = impl_->cursor->next(&read, maxEntries, wait);
    // What was read before an error is handed over all the same.
    for (oplog::OplogEntry& e : read)
        out->push_back({e.ts, e.txnId, toPublic(e.op), std::move(e.ns), std::move(e.key),
                        std::move(e.value)});
    read.clear();
    return s;
}

std::string_view changeOpName(ChangeOp op) {
    return replication::changeOpName(api::toEngine(op));
}

ChangeStream::ChangeStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChangeStream::~ChangeStream() = default;

StatusWith<std::optional<ChangeEvent>> ChangeStream::next(std::chrono::milliseconds wait) {
    auto ev = impl_->stream->next(wait);
    if (!ev.ok())
        return ev.status();
    if (!ev.value())
        return std::optional<ChangeEvent>();
    replication::ChangeEvent& e = *ev.value();
    return std::optional<ChangeEvent>(ChangeEvent{api::fromEngine(e.op), std::move(e.ns),
                                                  std::move(e.key), std::move(e.value),
                                                  e.clusterTime, e.txnId,
                                                  std::move(e.resumeToken)});
}

std::string ChangeStream::resumeToken() const {
    return impl_->stream->resumeToken();
}

}  // namespace mvkv
