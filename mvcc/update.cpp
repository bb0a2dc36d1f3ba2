#include "mvcc/update.h"

#include <cstring>
#include <new>

#include "mvcc/version_arena.h"

namespace mvkv::mvcc {

Update* Update::make(TxnId txnId, bool tombstone, std::string_view value) {
    if (tombstone)
        value = {};
    void* mem = allocateVersion(sizeof(Update) + value.size());
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
