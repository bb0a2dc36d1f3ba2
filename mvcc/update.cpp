#include "mvcc/update.h"

#include <cassert>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <new>

#include "mvcc/version_arena.h"

namespace mvkv::mvcc {

// Every key's newest version is one of these plus its value: a byte here is
// a megabyte at a million keys (docs/benchmarks.md, memory per key). The
// arena (version_arena.h) hands out 8-byte-aligned blocks in 8-byte classes.
static_assert(sizeof(Update) == 32, "Update's header grew: memory per key grows with it");
static_assert(alignof(Update) <= 8, "the version arena aligns blocks to 8");
static_assert(std::is_standard_layout_v<Update>);

Update* Update::make(TxnId txnId, bool tombstone, std::string_view value) {
    if (tombstone)
        value = {};
    static_assert(offsetof(Update, size_) + sizeof(size_) == kHeaderBytes,
                  "the value starts right after the header's last field");
    assert(txnId <= kMaxTxnId);
    void* mem = allocateVersion(allocationBytes(value.size()));
    auto* update = new (mem) Update(txnId, tombstone, static_cast<uint32_t>(value.size()));
    if (!value.empty())
        std::memcpy(update->data(), value.data(), value.size());
    return update;
}

void Update::destroy(Update* update) {
    size_t bytes = update->footprint();
    update->~Update();
    freeVersion(update, bytes);
}

size_t chainLength(const Update* head) {
    size_t n = 0;
    for (const Update* u = head; u; u = u->next())
        ++n;
    return n;
}

size_t chainFootprint(const Update* head) {
    size_t bytes = 0;
    for (const Update* u = head; u; u = u->next())
        bytes += u->footprint();
    return bytes;
}

void destroyVersions(Update* head) {
    while (head) {
        Update* next = head->next();
        Update::destroy(head);
        head = next;
    }
}

}  // namespace mvkv::mvcc
