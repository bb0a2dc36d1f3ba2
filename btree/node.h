// BTree internals: node layout, key blobs, version latches and in-node search.
// Not part of the public API; btree.cpp and cursor.cpp share it.
//
// Layout. A node is a header (version word, entry count, kind) followed by
// parallel arrays, one slot per key: the key's first 8 bytes and its next 8
// bytes as big-endian integers (most comparisons end there, and keys of up to
// 16 bytes are compared without touching the key itself), the key's length,
// a pointer to an immutable heap copy of the key (KeyBlob), and for a leaf the
// value, for an inner node the children (one more than keys).
//
// Inner node routing: child i holds the keys k with key[i-1] <= k < key[i]
// (key[-1] = -infinity, key[count] = +infinity).
//
// Concurrency (optimistic lock coupling, docs/btree.md):
// - version: bit 0 obsolete (unused: nodes are never unlinked), bit 1 locked,
//   the rest a counter. A writer locks with a CAS from an unlocked version v
//   it read earlier (so it knows nothing changed since), unlocks by adding 2
//   (clears the bit, bumps the counter).
// - A reader reads the version, reads fields, and re-reads the version; equal
//   and unlocked means what it read is one consistent state.
// - Every field a reader reads is an atomic: the reader loads with acquire and
//   writers store with release, so a reader that observes any store of a
//   writer also observes that writer's lock when it re-reads the version (no
//   fences needed; on x86 these are plain moves). Fields are written only
//   under the node's lock or before the node is published.
// - A KeyBlob is immutable once published and freed only through the
//   EpochManager, so a reader may dereference any blob pointer it loaded while
//   pinned, even one it reads from a state that then fails validation.
// - Nodes are never freed while the tree lives (no merges), so any non-null
//   child pointer a reader loads points to a node.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <thread>

#include "btree/arena.h"
#include "btree/btree.h"

namespace mvkv::btree_detail {

// Keys up to this long live in a slot's prefix and infix words alone: a
// leaf slot of such a key has no blob (saves an allocation per key). Inner
// nodes' separators always have one.
inline constexpr size_t kInlineKeyBytes = 16;

// An immutable copy of a key: the length, then the bytes.
struct KeyBlob {
    uint32_t len;

    const char* data() const { return reinterpret_cast<const char*>(this + 1); }
    std::string_view view() const { return std::string_view(data(), len); }
    size_t allocatedBytes() const { return sizeof(KeyBlob) + len; }

    static const KeyBlob* make(std::string_view key) {
        void* mem = ::operator new(sizeof(KeyBlob) + key.size());
        auto* blob = static_cast<KeyBlob*>(mem);
        blob->len = static_cast<uint32_t>(key.size());
        if (!key.empty()) {
            std::memcpy(blob + 1, key.data(), key.size());
        }
        return blob;
    }
    // Signature fits EpochManager::retire.
    static void destroy(void* blob) { ::operator delete(blob); }
};

// Bytes [offset, offset + 8) of a key as a big-endian integer, zero padded:
// comparing two such words as integers compares those bytes in memcmp order.
inline uint64_t keyWord(const char* data, size_t len, size_t offset) {
    uint64_t word = 0;
    if (len > offset) {
        std::memcpy(&word, data + offset, std::min<size_t>(len - offset, 8));
    }
    if constexpr (std::endian::native == std::endian::little) {
        word = __builtin_bswap64(word);
    }
    return word;
}

// A key being searched for, with its inline words computed once.
struct SearchKey {
    explicit SearchKey(std::string_view k)
        : bytes(k), prefix(keyWord(k.data(), k.size(), 0)), infix(keyWord(k.data(), k.size(), 8)) {}
    std::string_view bytes;
    uint64_t prefix;  // bytes 0..7
    uint64_t infix;   // bytes 8..15
};

// memcmp order, a prefix first.
inline int compareBytes(std::string_view a, std::string_view b) {
    size_t n = std::min(a.size(), b.size());
    int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
    if (c != 0) {
        return c;
    }
    return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

constexpr uint64_t kObsoleteBit = 1;
constexpr uint64_t kLockedBit = 2;

struct Node {
    explicit Node(bool leaf) : isLeaf(leaf) {}
    std::atomic<uint64_t> version{0};
    std::atomic<uint16_t> count{0};
    const bool isLeaf;  // immutable, published with the node
};

template <int N>
struct KeySlots {
    std::atomic<uint64_t> prefix[N];  // bytes 0..7, searched first
    std::atomic<uint64_t> infix[N];   // bytes 8..15, read when prefixes tie
    std::atomic<uint32_t> len[N];
    std::atomic<const KeyBlob*> blob[N];

    // Slot i against k: < 0, 0, > 0. Safe on torn state (the answer is then
    // meaningless, and the caller's validation fails).
    int compare(int i, const SearchKey& k) const {
        uint64_t p = prefix[i].load(std::memory_order_acquire);
        if (p != k.prefix) {
            return p < k.prefix ? -1 : 1;
        }
        size_t slotLen = len[i].load(std::memory_order_acquire);
        size_t keyLen = k.bytes.size();
        if (slotLen > 8 && keyLen > 8) {
            uint64_t q = infix[i].load(std::memory_order_acquire);
            if (q != k.infix) {
                return q < k.infix ? -1 : 1;
            }
        }
        if (slotLen > 16 && keyLen > 16) {
            const KeyBlob* b = blob[i].load(std::memory_order_acquire);
            if (b == nullptr) {
                return 0;
            }
            // The blob's own length bounds the read, whatever slotLen said.
            slotLen = b->len;
            size_t n = std::min(slotLen, keyLen);
            if (n > 16) {
                int c = std::memcmp(b->data() + 16, k.bytes.data() + 16, n - 16);
                if (c != 0) {
                    return c;
                }
            }
        }
        // Equal words (zero padding only past a key's end) and equal bytes
        // beyond: equal up to the shorter key, which sorts first.
        return slotLen < keyLen ? -1 : (slotLen > keyLen ? 1 : 0);
    }

    // First slot in [0, n) whose prefix is not less than k's: the only slot
    // that can equal k when prefixes are distinct. Reads the prefix array only.
    int lowerBoundPrefix(int n, const SearchKey& k) const {
        int lo = 0;
        int hi = n;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (prefix[mid].load(std::memory_order_acquire) < k.prefix) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    // Starts loading slot i's other words (length, infix), which the final
    // compare reads one after the other, so their misses overlap.
    void prefetchSlot(int i) const {
        __builtin_prefetch(&len[i]);
        __builtin_prefetch(&infix[i]);
    }

    // First slot in [0, n) not less than k; `equal` tells whether it equals k.
    // `from` may skip slots already known to be less than k (those below
    // lowerBoundPrefix's answer).
    int lowerBound(int n, const SearchKey& k, bool& equal, int from = 0) const {
        int lo = from;
        int hi = n;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (compare(mid, k) < 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        equal = lo < n && compare(lo, k) == 0;
        return lo;
    }

    // First slot in [0, n) greater than k.
    int upperBound(int n, const SearchKey& k) const {
        int lo = 0;
        int hi = n;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (compare(mid, k) <= 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    // Writer side (node locked or unpublished).
    void set(int i, const KeyBlob* b) { set(i, b->view(), b); }
    /// `key` in slot i; `b` its blob, which only a key longer than
    /// kInlineKeyBytes needs (shorter ones live in prefix and infix alone).
    void set(int i, std::string_view key, const KeyBlob* b) {
        prefix[i].store(keyWord(key.data(), key.size(), 0), std::memory_order_release);
        infix[i].store(keyWord(key.data(), key.size(), 8), std::memory_order_release);
        len[i].store(static_cast<uint32_t>(key.size()), std::memory_order_release);
        blob[i].store(b, std::memory_order_release);
    }
    /// Writer side: slot i's key, from its blob or rebuilt into `scratch`.
    std::string_view keyAt(int i, char (&scratch)[kInlineKeyBytes]) const {
        uint32_t n = len[i].load(std::memory_order_relaxed);
        if (n > kInlineKeyBytes)
            return blob[i].load(std::memory_order_relaxed)->view();
        copyKey(i, scratch, sizeof(scratch));
        return std::string_view(scratch, n);
    }
    void copyFrom(int i, const KeySlots& src, int j) {
        prefix[i].store(src.prefix[j].load(std::memory_order_relaxed), std::memory_order_release);
        infix[i].store(src.infix[j].load(std::memory_order_relaxed), std::memory_order_release);
        len[i].store(src.len[j].load(std::memory_order_relaxed), std::memory_order_release);
        blob[i].store(src.blob[j].load(std::memory_order_relaxed), std::memory_order_release);
    }
    const KeyBlob* blobAt(int i) const { return blob[i].load(std::memory_order_acquire); }

    // Copies slot i's key to `out` and returns its length. `room`, the space
    // at `out`, must be at least 16. Keys of up to 16 bytes are
    // rebuilt from the inline words (16 bytes stored, whatever the length),
    // so a scan does not touch their blobs. `room` is the space at `out`; a
    // longer key returns its length without copying, so the caller can grow
    // the buffer and ask again. -1 on torn state (a null blob); the caller's
    // validation fails then anyway.
    int64_t copyKey(int i, char* out, size_t room) const {
        uint32_t n = len[i].load(std::memory_order_acquire);
        if (n <= 16) {
            uint64_t words[2] = {prefix[i].load(std::memory_order_acquire),
                                 infix[i].load(std::memory_order_acquire)};
            if constexpr (std::endian::native == std::endian::little) {
                words[0] = __builtin_bswap64(words[0]);
                words[1] = __builtin_bswap64(words[1]);
            }
            std::memcpy(out, words, sizeof(words));
            return n;
        }
        const KeyBlob* b = blobAt(i);
        if (b == nullptr) {
            return -1;
        }
        if (b->len <= room) {
            std::memcpy(out, b->data(), b->len);
        }
        return b->len;
    }
};

// Cache-line aligned, so that the header and the prefix array fill as few
// lines as possible (prefetchNode relies on it).
struct alignas(64) Leaf : Node {
    static constexpr int kCapacity = BTree::kLeafCapacity;
    Leaf() : Node(true) {}
    // Nodes live in the node arena (huge pages where available; arena.h).
    static void* operator new(size_t bytes) { return allocateNode(bytes); }
    static void operator delete(void* p, size_t bytes) { freeNode(p, bytes); }
    KeySlots<kCapacity> keys;
    std::atomic<void*> values[kCapacity];
    // The leaf to the right: the one whose range starts at this leaf's high
    // fence (null for the last leaf). Set by splitLeaf under this leaf's
    // latch, so a reader that validates this leaf's version after loading it
    // knows it is the right neighbour still. Only forward scans follow it
    // (BTree::Cursor::continueForward); fits in the padding to 64 bytes.
    std::atomic<Leaf*> next{nullptr};
};

struct alignas(64) Inner : Node {
    static constexpr int kCapacity = BTree::kInnerCapacity;
    Inner() : Node(false) {}
    static void* operator new(size_t bytes) { return allocateNode(bytes); }
    static void operator delete(void* p, size_t bytes) { freeNode(p, bytes); }
    KeySlots<kCapacity> keys;
    std::atomic<Node*> children[kCapacity + 1];
};

// Starts loading the lines a search of `n` reads first (the header and the
// prefix array) at once, so that the binary search's cache misses overlap
// instead of following one another. Leaf and Inner lay these out alike.
inline void prefetchNode(const Node* n) {
    // Leaf and Inner start with the header, then KeySlots, whose first array is prefix.
    constexpr size_t kBytes = sizeof(Node) + sizeof(KeySlots<Leaf::kCapacity>::prefix);
    const char* p = reinterpret_cast<const char*>(n);
    for (size_t off = 0; off < kBytes; off += 64) {
        __builtin_prefetch(p + off);
    }
}

inline Leaf* asLeaf(Node* n) {
    return static_cast<Leaf*>(n);
}
inline Inner* asInner(Node* n) {
    return static_cast<Inner*>(n);
}

// The entry count as a reader sees it, clamped so that torn state can never
// index out of bounds.
inline int readCount(const Node* n, int capacity) {
    return std::min<int>(n->count.load(std::memory_order_acquire), capacity);
}

// --- Version latch -------------------------------------------------------

// Reads the version for an optimistic read; false if locked (or obsolete).
inline bool readLock(const Node* n, uint64_t& version) {
    version = n->version.load(std::memory_order_acquire);
    return (version & (kLockedBit | kObsoleteBit)) == 0;
}

// True if nothing was written to the node since readLock returned `version`.
inline bool validate(const Node* n, uint64_t version) {
    return n->version.load(std::memory_order_acquire) == version;
}

// Turns an optimistic read at `version` into the write lock; false if the node
// changed since (the caller restarts).
inline bool upgradeToWrite(Node* n, uint64_t version) {
    return n->version.compare_exchange_strong(version, version + kLockedBit,
                                              std::memory_order_acq_rel, std::memory_order_relaxed);
}

inline void writeUnlock(Node* n) {
    n->version.fetch_add(kLockedBit, std::memory_order_release);
}

// Backoff between restarts: spin a little, then let the writer run (it may be
// descheduled while holding the latch, and on few cores we must yield to it).
class Restarter {
  public:
    void pause() {
        if (++restarts_ < 8) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        } else {
            std::this_thread::yield();
        }
    }

  private:
    int restarts_ = 0;
};

// --- Descent -------------------------------------------------------------

// One optimistic descent from the root to a leaf: lock coupling without locks.
// At each inner node, read at version `v` with `n` entries, childSlot(inner, v,
// n) names the child to follow, or -1 to give up (the caller restarts). The
// parent is validated after the child's version is read: the child was the
// right one at a moment when its version was the one kept. Returns the leaf
// with its version in `v`, or nullptr on any conflict (the caller restarts).
template <class ChildSlot>
inline Leaf* descend(const std::atomic<Node*>& root, uint64_t& v, ChildSlot&& childSlot) {
    Node* node = root.load(std::memory_order_acquire);
    if (!readLock(node, v) || node != root.load(std::memory_order_acquire)) {
        return nullptr;
    }
    while (!node->isLeaf) {
        Inner* inner = asInner(node);
        int pos = childSlot(inner, v, readCount(inner, Inner::kCapacity));
        if (pos < 0) {
            return nullptr;
        }
        Node* child = inner->children[pos].load(std::memory_order_acquire);
        if (child != nullptr) {
            prefetchNode(child);
        }
        uint64_t cv;
        if (child == nullptr || !readLock(child, cv) || !validate(inner, v)) {
            return nullptr;
        }
        node = child;
        v = cv;
    }
    return asLeaf(node);
}

// The descent of a point operation: to the leaf whose range holds k.
inline Leaf* descendToKey(const std::atomic<Node*>& root, const SearchKey& k, uint64_t& v) {
    return descend(root, v,
                   [&k](Inner* inner, uint64_t, int n) { return inner->keys.upperBound(n, k); });
}

}  // namespace mvkv::btree_detail
