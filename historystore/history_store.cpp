#include "historystore/history_store.h"

#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "mvcc/version_arena.h"

namespace mvkv::historystore {

namespace {

void appendBigEndian(std::string& out, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// (collection, key): the part every entry of one key starts with.
void appendKeyPrefix(std::string& out, uint32_t collection, std::string_view key) {
    appendBigEndian(out, collection, 4);
    for (char c : key) {
        out.push_back(c);
        if (c == '\0')
            out.push_back('\xff');
    }
    out.push_back('\0');
    out.push_back('\x01');
}

bool startsWith(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && std::memcmp(s.data(), prefix.data(), prefix.size()) == 0;
}

}  // namespace

HistoryEntry* HistoryEntry::make(const HistoryEntry& header, std::string_view value) {
    void* mem = mvcc::allocateVersion(sizeof(HistoryEntry) + value.size());
    auto* entry = new (mem) HistoryEntry(header);
    entry->size = static_cast<uint32_t>(value.size());
    if (!value.empty())
        std::memcpy(entry + 1, value.data(), value.size());
    return entry;
}

void HistoryEntry::destroy(void* entry) {
    auto* e = static_cast<HistoryEntry*>(entry);
    size_t bytes = e->footprint();
    e->~HistoryEntry();
    mvcc::freeVersion(e, bytes);
}

HistoryStore::HistoryStore(EpochManager& epochs) : epochs_(epochs), tree_(epochs) {}

HistoryStore::~HistoryStore() {
    std::vector<void*> entries;
    BTree::Cursor c(tree_);
    for (c.seekFirst(); c.valid(); c.next())
        entries.push_back(c.value());
    for (void* e : entries)
        HistoryEntry::destroy(e);
}

void HistoryStore::insert(uint32_t collection, std::string_view key, const mvcc::Update& version,
                          const mvcc::Update& stop) {
    HistoryEntry header{version.txnId(), version.startTs(), stop.txnId(), stop.startTs(), 0,
                        version.isTombstone()};
    HistoryEntry* entry = HistoryEntry::make(header, version.value());
    std::string k;
    k.reserve(4 + key.size() + 2 + 16);
    appendKeyPrefix(k, collection, key);
    appendBigEndian(k, version.startTs(), 8);
    appendBigEndian(k, counter_.fetch_add(1, std::memory_order_relaxed), 8);
    tree_.insertIfAbsent(k, entry);  // the counter makes the key unique
    entries_.fetch_add(1, std::memory_order_relaxed);
    bytes_.fetch_add(static_cast<int64_t>(entry->footprint() + k.size()), std::memory_order_relaxed);
    inserts_.fetch_add(1, std::memory_order_relaxed);
}

const HistoryEntry* HistoryStore::findVisible(Reader& reader, uint32_t collection,
                                              std::string_view key,
                                              const mvcc::Transaction& txn) const {
    reader.prefix_.clear();
    appendKeyPrefix(reader.prefix_, collection, key);
    // The newest entry that started at or before the read timestamp; older
    // ones while the transaction cannot see the entry's writer.
    reader.target_.assign(reader.prefix_);
    appendBigEndian(reader.target_,
                    txn.hasReadTs() ? txn.readTs() : std::numeric_limits<uint64_t>::max(), 8);
    appendBigEndian(reader.target_, std::numeric_limits<uint64_t>::max(), 8);
    BTree::Cursor& c = reader.cursor_;
    for (c.seekForPrev(reader.target_); c.valid() && startsWith(c.key(), reader.prefix_);
         c.prev()) {
        // The entry the reader sees is the one whose writer it can see and
        // whose replacement it cannot: entries with one start ts may sort in
        // any order, and a removed key's leftovers must not come back.
        const auto* entry = static_cast<const HistoryEntry*>(c.value());
        if (entry && txn.canSeeCommitted(entry->txnId, entry->startTs) &&
            !txn.canSeeCommitted(entry->stopTxnId, entry->stopTs))
            return entry;
    }
    return nullptr;
}

void HistoryStore::forEachVersion(uint32_t collection, std::string_view key,
                                  const std::function<void(const HistoryEntry&)>& fn) const {
    std::string prefix;
    appendKeyPrefix(prefix, collection, key);
    std::string target = prefix;
    appendBigEndian(target, std::numeric_limits<uint64_t>::max(), 8);
    appendBigEndian(target, std::numeric_limits<uint64_t>::max(), 8);
    BTree::Cursor c(tree_);
    for (c.seekForPrev(target); c.valid() && startsWith(c.key(), prefix); c.prev()) {
        if (const auto* entry = static_cast<const HistoryEntry*>(c.value()))
            fn(*entry);
    }
}

size_t HistoryStore::discardObsolete(const mvcc::Horizon& horizon,
                                     const std::function<bool(uint32_t)>& dropped) {
    size_t removed = 0;
    BTree::Cursor c(tree_);
    std::string key;
    for (c.seekFirst(); c.valid(); c.next()) {
        // One pin per entry: a long pass must not hold back reclamation.
        auto guard = epochs_.pin();
        auto* entry = static_cast<HistoryEntry*>(c.value());
        if (entry == nullptr)
            continue;  // removed since the cursor got there
        std::string_view k = c.key();
        uint32_t collection = 0;
        for (size_t i = 0; i < 4 && i < k.size(); ++i)
            collection = (collection << 8) | static_cast<unsigned char>(k[i]);
        if (!horizon.visibleToAll(entry->stopTxnId, entry->stopTs) && !dropped(collection))
            continue;
        key.assign(k);
        if (!tree_.removeIf(key, entry))
            continue;
        entries_.fetch_sub(1, std::memory_order_relaxed);
        bytes_.fetch_sub(static_cast<int64_t>(entry->footprint() + key.size()),
                         std::memory_order_relaxed);
        removals_.fetch_add(1, std::memory_order_relaxed);
        epochs_.retire(entry, &HistoryEntry::destroy);
        ++removed;
    }
    return removed;
}

HistoryStore::Stats HistoryStore::stats() const {
    Stats s;
    int64_t entries = entries_.load(std::memory_order_relaxed);
    int64_t bytes = bytes_.load(std::memory_order_relaxed);
    s.entries = entries > 0 ? static_cast<uint64_t>(entries) : 0;
    s.bytes = bytes > 0 ? static_cast<uint64_t>(bytes) : 0;
    s.inserts = inserts_.load(std::memory_order_relaxed);
    s.removals = removals_.load(std::memory_order_relaxed);
    return s;
}

}  // namespace mvkv::historystore
