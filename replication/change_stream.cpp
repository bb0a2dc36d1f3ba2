#include "replication/change_stream.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/collection_options.h"
#include "engine/engine.h"
#include "engine/namespace.h"
#include "engine/ttl_value.h"

namespace mvkv::replication {

using engine::Collection;
using engine::CollectionOptions;
using engine::Engine;
using engine::Namespace;
using engine::ttlUserValue;

namespace {

using Clock = std::chrono::steady_clock;

// Token text: a format version, the timestamp and the entry index, in hex.
constexpr std::string_view kTokenVersion = "01";
constexpr size_t kTokenChars = 2 + 16 + 8;

bool parseHex(std::string_view text, uint64_t* out) {
    uint64_t v = 0;
    for (char c : text) {
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return false;
        v = (v << 4) | static_cast<uint64_t>(d);
    }
    *out = v;
    return true;
}

// The event an oplog entry makes, if any (a create or collMod makes none).
std::optional<ChangeOp> eventOf(const oplog::OplogEntry& e) {
    switch (e.op) {
        case oplog::OpType::kInsert: return ChangeOp::kInsert;
        case oplog::OpType::kUpdate: return ChangeOp::kUpdate;
        case oplog::OpType::kDelete: return ChangeOp::kDelete;
        case oplog::OpType::kCommand:
            if (e.value == "drop")
                return ChangeOp::kDrop;
            if (e.value == "dropDatabase")
                return ChangeOp::kDropDatabase;
            return std::nullopt;
    }
    return std::nullopt;
}

// The `local` database and `<db>.system.*` are the engine's own.
bool internalNamespace(std::string_view ns) {
    const size_t dot = ns.find('.');
    const std::string_view db = ns.substr(0, dot);
    if (db == Namespace::kLocalDb)
        return true;
    return dot != std::string_view::npos && ns.substr(dot + 1).starts_with("system.");
}

}  // namespace

std::string_view changeOpName(ChangeOp op) {
    switch (op) {
        case ChangeOp::kInsert: return "insert";
        case ChangeOp::kUpdate: return "update";
        case ChangeOp::kDelete: return "delete";
        case ChangeOp::kDrop: return "drop";
        case ChangeOp::kDropDatabase: return "dropDatabase";
    }
    return "?";
}

StatusWith<ChangeOp> parseChangeOp(std::string_view name) {
    for (ChangeOp op : {ChangeOp::kInsert, ChangeOp::kUpdate, ChangeOp::kDelete, ChangeOp::kDrop,
                        ChangeOp::kDropDatabase})
        if (changeOpName(op) == name)
            return op;
    return Status::InvalidArgument(fmt::format(
        "unknown change event type '{}'; use insert, update, delete, drop or dropDatabase", name));
}

std::string encodeResumeToken(ResumePosition pos) {
    return fmt::format("{}{:016x}{:08x}", kTokenVersion, pos.ts, pos.index);
}

StatusWith<ResumePosition> decodeResumeToken(std::string_view token) {
    uint64_t ts = 0, index = 0;
    if (token.size() != kTokenChars || !token.starts_with(kTokenVersion) ||
        !parseHex(token.substr(2, 16), &ts) || !parseHex(token.substr(18, 8), &index) || ts == 0)
        return Status::InvalidArgument(fmt::format(
            "'{}' is not a resume token: use the resumeToken of an event a change stream "
            "returned ({} lowercase hex digits)",
            token, kTokenChars));
    return ResumePosition{ts, static_cast<uint32_t>(index)};
}

StatusWith<std::unique_ptr<ChangeStream>> openChangeStream(Engine& engine,
                                                          ChangeStreamOptions options) {
    oplog::Oplog* const log = engine.oplog();
    if (!log)
        return Status::IllegalOperation(
            "this in-memory engine keeps no oplog (inMemoryOplogCapBytes is 0), so it has no "
            "change streams; open it with a cap, or on a path");
    if (!options.ns.empty()) {
        Status s = options.ns.find('.') == std::string::npos
                       ? Namespace::checkDbName(options.ns)
                       : Namespace::parse(options.ns).status();
        if (!s.ok())
            return Status(s.code(), "change stream namespace: " + s.message());
    }
    if (!options.resumeAfter.empty() && options.startAtTimestamp != mvcc::kNoTimestamp)
        return Status::InvalidArgument(
            "give a change stream resumeAfter or startAtTimestamp, not both");
    std::optional<ResumePosition> skip;
    oplog::RecordKey start;
    if (!options.resumeAfter.empty()) {
        auto pos = decodeResumeToken(options.resumeAfter);
        if (!pos.ok())
            return pos.status();
        skip = pos.value();
        start = {pos.value().ts - 1, UINT64_MAX};  // every record at the token's timestamp
    } else if (options.startAtTimestamp != mvcc::kNoTimestamp) {
        start = {options.startAtTimestamp - 1, UINT64_MAX};
    } else {
        // Now: everything committed before the call counts as before it.
        start = {std::min(engine.majorityCommitTs(), log->refreshVisibility()), UINT64_MAX};
    }
    return std::make_unique<ChangeStream>(engine, *log, std::move(options), start, skip);
}

ChangeStream::ChangeStream(Engine& engine, oplog::Oplog& oplog, ChangeStreamOptions options,
                           oplog::RecordKey start, std::optional<ResumePosition> skipThrough)
    : engine_(engine),
      oplog_(oplog),
      options_(std::move(options)),
      position_(start),
      skipThrough_(skipThrough) {}

bool ChangeStream::nsMatches(std::string_view ns, bool isDatabase) const {
    const std::string& want = options_.ns;
    if (want.empty() || ns == want)
        return true;
    const bool wantDb = want.find('.') == std::string::npos;
    if (isDatabase)  // a dropDatabase reaches the streams of its collections
        return !wantDb && want.size() > ns.size() && want.compare(0, ns.size(), ns) == 0 &&
               want[ns.size()] == '.';
    return wantDb && ns.size() > want.size() && ns.compare(0, want.size(), want) == 0 &&
           ns[want.size()] == '.';
}

bool ChangeStream::opMatches(ChangeOp op) const {
    const auto& ops = options_.operationTypes;
    return ops.empty() || std::find(ops.begin(), ops.end(), op) != ops.end();
}

bool ChangeStream::isTtl(const std::string& ns) {
    auto it = ttl_.find(ns);
    if (it != ttl_.end())
        return it->second;
    std::shared_ptr<Collection> coll = engine_.catalog().lookup(ns);
    const bool ttl = coll && coll->ttl();
    ttl_.emplace(ns, ttl);
    return ttl;
}

Status ChangeStream::readMore(bool* readAny) {
    *readAny = false;
    refs_.clear();
    const mvcc::Timestamp bound = std::min(engine_.majorityCommitTs(), oplog_.visibleTs());
    Status s = oplog_.recordsAfter(position_, false, bound, 256, &refs_);
    if (s.code() == StatusCode::kCappedPositionLost)
        return Status::ChangeStreamHistoryLost(
            "the change stream's position is no longer in the oplog (capping dropped it): " +
            s.message() + "; open a new stream without a resume token");
    if (!s.ok())
        return s;
    for (const oplog::RecordRef& ref : refs_) {
        if (Status r = oplog_.readRecord(ref, &payload_); !r.ok()) {
            if (r.code() == StatusCode::kCappedPositionLost)
                return Status::ChangeStreamHistoryLost(
                    "the oplog was capped under the change stream: " + r.message());
            return r;
        }
        if (Status d = oplog::decodeEntries(payload_, &decoded_); !d.ok())
            return d;
        oplog::takePreparedDurableTs(&decoded_);  // recovery's, not an event
        // Entry indexes count every entry at the record's timestamp.
        const uint32_t base = ref.key.ts == lastTs_ ? entriesAtLastTs_ : 0;
        // A prepare or abort record holds writes that are not committed
        // (docs/oplog.md): they show once, from the commit record, if ever.
        // Its entries still count in the indexes, as a restart counts them.
        const bool uncommitted = oplog::preparedRecordKind(decoded_) != oplog::PreparedRecord::kNone;
        for (size_t i = 0; i < decoded_.size() && !uncommitted; ++i) {
            oplog::OplogEntry& e = decoded_[i];
            const ResumePosition pos{ref.key.ts, base + static_cast<uint32_t>(i)};
            if (skipThrough_ && pos.ts == skipThrough_->ts && pos.index <= skipThrough_->index)
                continue;
            if (e.op == oplog::OpType::kCommand) {
                // A create or drop changes what the namespace's values hold.
                ttl_.erase(e.ns);
                if (e.value == "dropDatabase")
                    ttl_.clear();
                CollectionOptions created;
                if (auto isCreate = parseCreateCommand(e.value, &created);
                    isCreate.ok() && isCreate.value())
                    ttl_[e.ns] = created.expireAfterSeconds.has_value();
            }
            std::optional<ChangeOp> op = eventOf(e);
            if (!op || internalNamespace(e.ns) || !opMatches(*op) ||
                !nsMatches(e.ns, *op == ChangeOp::kDropDatabase))
                continue;
            ChangeEvent& ev = ready_.emplace_back();
            ev.op = *op;
            ev.clusterTime = ref.key.ts;
            ev.txnId = e.txnId;
            ev.resumeToken = encodeResumeToken(pos);
            if (*op == ChangeOp::kInsert || *op == ChangeOp::kUpdate)
                ev.value = isTtl(e.ns) ? std::string(ttlUserValue(e.value)) : std::move(e.value);
            if (*op != ChangeOp::kDrop && *op != ChangeOp::kDropDatabase)
                ev.key = std::move(e.key);
            ev.ns = std::move(e.ns);
        }
        entriesAtLastTs_ = base + static_cast<uint32_t>(decoded_.size());
        lastTs_ = ref.key.ts;
        position_ = ref.key;
        *readAny = true;
    }
    return Status::OK();
}

StatusWith<std::optional<ChangeEvent>> ChangeStream::next(std::chrono::milliseconds wait) {
    const auto deadline = Clock::now() + wait;
    while (ready_.empty()) {
        if (!lost_.ok())
            return lost_;
        const mvcc::Timestamp majority = engine_.majorityCommitTs();
        const mvcc::Timestamp visible = oplog_.visibleTs();
        bool readAny = false;
        if (Status s = readMore(&readAny); !s.ok()) {
            if (s.code() == StatusCode::kChangeStreamHistoryLost)
                lost_ = s;
            return s;
        }
        if (!ready_.empty())
            break;
        if (readAny)
            continue;  // records, none of them for this stream: read on
        if (Clock::now() >= deadline)
            return std::optional<ChangeEvent>();
        // Wait on whichever bound holds the stream back.
        if (majority < visible)
            engine_.waitMajorityCommitAfter(majority, deadline);
        else
            oplog_.waitVisibleAfter(visible, deadline);
    }
    ChangeEvent ev = std::move(ready_.front());
    ready_.pop_front();
    lastToken_ = ev.resumeToken;
    return std::optional<ChangeEvent>(std::move(ev));
}

}  // namespace mvkv::replication
