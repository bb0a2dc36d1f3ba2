#include "oplog/oplog_entry.h"

#include <fmt/format.h>

#include <cassert>

#include "oplog/log_format.h"

namespace mvkv::oplog {

namespace {

void putString(std::string& out, std::string_view s) {
    char len[4];
    putU32(len, static_cast<uint32_t>(s.size()));
    out.append(len, 4);
    out.append(s.data(), s.size());
}

// Reads fields off a payload, remembering the first thing that was wrong.
class Cursor {
  public:
    explicit Cursor(std::string_view data) : data_(data) {}

    bool u32(uint32_t* v) {
        if (!need(4, "a length or count"))
            return false;
        *v = getU32(data_.data() + at_);
        at_ += 4;
        return true;
    }
    bool u64(uint64_t* v) {
        if (!need(8, "a timestamp or id"))
            return false;
        *v = getU64(data_.data() + at_);
        at_ += 8;
        return true;
    }
    bool byte(char* c) {
        if (!need(1, "an op"))
            return false;
        *c = data_[at_++];
        return true;
    }
    bool string(std::string* s, const char* what) {
        uint32_t len;
        if (!u32(&len) || !need(len, what))
            return false;
        s->assign(data_.data() + at_, len);
        at_ += len;
        return true;
    }
    size_t offset() const { return at_; }
    size_t left() const { return data_.size() - at_; }
    const std::string& error() const { return error_; }
    void fail(std::string message) {
        if (error_.empty())
            error_ = std::move(message);
    }

  private:
    bool need(size_t n, const char* what) {
        if (left() >= n)
            return true;
        fail(fmt::format("payload ends at byte {} inside {} ({} bytes needed, {} left)", at_, what,
                         n, left()));
        return false;
    }

    std::string_view data_;
    size_t at_ = 0;
    std::string error_;
};

bool validOp(char c) {
    return c == 'i' || c == 'u' || c == 'd' || c == 'c';
}

}  // namespace

// The encoder: kPayloadHeaderBytes and kMinEntryBytes (oplog_entry.h) count
// what these two write; the asserts keep them honest.
void startPayload(std::string* payload, uint32_t count) {
    char buf[4];
    putU32(buf, count);
    payload->assign(buf, 4);
    assert(payload->size() == kPayloadHeaderBytes);
}

void addEntry(std::string* payload, mvcc::Timestamp ts, mvcc::TxnId txnId, OpType op,
              std::string_view ns, std::string_view key, std::string_view value) {
    [[maybe_unused]] const size_t before = payload->size();
    char buf[8];
    putU64(buf, ts);
    payload->append(buf, 8);
    putU64(buf, txnId);
    payload->append(buf, 8);
    payload->push_back(static_cast<char>(op));
    putString(*payload, ns);
    putString(*payload, key);
    putString(*payload, value);
    assert(payload->size() - before == kMinEntryBytes + ns.size() + key.size() + value.size());
}

std::string encodeEntries(const std::vector<OplogEntry>& entries) {
    std::string out;
    startPayload(&out, static_cast<uint32_t>(entries.size()));
    for (const OplogEntry& e : entries)
        addEntry(&out, e.ts, e.txnId, e.op, e.ns, e.key, e.value);
    return out;
}

Status decodeEntries(std::string_view payload, std::vector<OplogEntry>* out) {
    out->clear();
    Cursor c(payload);
    uint32_t count = 0;
    if (c.u32(&count)) {
        // Each entry takes at least kMinEntryBytes (an entry with an empty
        // ns, key and value, as addEntry writes it): a count past that is
        // garbage, refused before any entry is read. (Nothing is reserved
        // for the count: memory grows only with the entries read.)
        if (count > c.left() / kMinEntryBytes)
            c.fail(fmt::format("entry count {} does not fit in {} bytes", count, c.left()));
    }
    for (uint32_t i = 0; c.error().empty() && i < count; ++i) {
        OplogEntry e;
        char op = 0;
        if (!c.u64(&e.ts) || !c.u64(&e.txnId) || !c.byte(&op))
            break;
        if (!validOp(op)) {
            c.fail(fmt::format("entry {} has op byte 0x{:02x}, not i, u, d or c", i,
                               static_cast<unsigned char>(op)));
            break;
        }
        e.op = static_cast<OpType>(op);
        if (!c.string(&e.ns, "a namespace") || !c.string(&e.key, "a key") ||
            !c.string(&e.value, "a value"))
            break;
        out->push_back(std::move(e));
    }
    if (c.error().empty() && c.left() != 0)
        c.fail(fmt::format("{} bytes left over after {} entries", c.left(), count));
    if (!c.error().empty()) {
        out->clear();
        return Status::Corruption("oplog record: " + c.error());
    }
    return Status::OK();
}

}  // namespace mvkv::oplog

namespace mvkv::oplog {

bool plausiblePayload(std::string_view payload) {
    if (payload.size() < kPayloadHeaderBytes + kMinEntryBytes)
        return false;
    const uint32_t count = getU32(payload.data());
    if (count == 0 || count > (payload.size() - kPayloadHeaderBytes) / kMinEntryBytes)
        return false;
    // The first entry: ts (8), txn id (8), op (1), then the namespace's length.
    const size_t opAt = kPayloadHeaderBytes + 8 + 8;
    if (!validOp(payload[opAt]))
        return false;
    return getU32(payload.data() + opAt + 1) <= payload.size() - kPayloadHeaderBytes - kMinEntryBytes;
}

}  // namespace mvkv::oplog
