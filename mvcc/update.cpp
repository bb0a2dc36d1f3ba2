#include "mvcc/update.h"

#include <cstring>
#include <new>

namespace mvkv::mvcc {

Update* Update::make(TxnId txnId, bool tombstone, std::string_view value) {
    if (tombstone)
        value = {};
    void* mem = ::operator new(sizeof(Update) + value.size());
    auto* update = new (mem) Update(txnId, tombstone, static_cast<uint32_t>(value.size()));
    if (!value.empty())
        std::memcpy(update->data(), value.data(), value.size());
    return update;
}

void Update::destroy(Update* update) {
    update->~Update();
    ::operator delete(update);
}

UpdateChain::~UpdateChain() {
    Update* u = head_.load(std::memory_order_relaxed);
    while (u) {
        Update* next = u->next();
        Update::destroy(u);
        u = next;
    }
}

size_t UpdateChain::length() const {
    size_t n = 0;
    for (Update* u = head(); u; u = u->next())
        ++n;
    return n;
}

size_t UpdateChain::footprint() const {
    size_t bytes = sizeof(UpdateChain);
    for (Update* u = head(); u; u = u->next())
        bytes += u->footprint();
    return bytes;
}

}  // namespace mvkv::mvcc
