// BTree point operations: find, insertIfAbsent, remove, and the splits.
// The protocol is in node.h and docs/btree.md; in short, every operation
// descends with optimistic reads, validating each parent after it has read the
// child's version (lock coupling without locks), and restarts from the root on
// any conflict. Writers upgrade the versions they read to write locks.
#include "btree/btree.h"

#include <cassert>
#include <functional>
#include <thread>
#include <vector>

#include "btree/node.h"

namespace mvkv {

using namespace btree_detail;

namespace {

// Leaf slots [pos, n) move one to the right; the caller fills pos.
void leafShiftRight(Leaf* leaf, int pos, int n) {
    for (int i = n; i > pos; --i) {
        leaf->keys.copyFrom(i, leaf->keys, i - 1);
        leaf->values[i].store(leaf->values[i - 1].load(std::memory_order_relaxed),
                              std::memory_order_release);
    }
}

// Inserts at pos into a locked (or unpublished) leaf that has room. The count
// is stored last, so a reader that sees it also sees the slot.
void leafInsertAt(Leaf* leaf, int pos, std::string_view key, const KeyBlob* blob, void* value) {
    int n = leaf->count.load(std::memory_order_relaxed);
    assert(n < Leaf::kCapacity);
    leafShiftRight(leaf, pos, n);
    leaf->keys.set(pos, key, blob);
    leaf->values[pos].store(value, std::memory_order_release);
    leaf->count.store(static_cast<uint16_t>(n + 1), std::memory_order_release);
}

// Removes slot pos from a locked leaf; returns its key blob for retirement
// (null for a key short enough to have none).
const KeyBlob* leafRemoveAt(Leaf* leaf, int pos) {
    int n = leaf->count.load(std::memory_order_relaxed);
    const KeyBlob* removed = leaf->keys.blob[pos].load(std::memory_order_relaxed);
    for (int i = pos; i + 1 < n; ++i) {
        leaf->keys.copyFrom(i, leaf->keys, i + 1);
        leaf->values[i].store(leaf->values[i + 1].load(std::memory_order_relaxed),
                              std::memory_order_release);
    }
    leaf->count.store(static_cast<uint16_t>(n - 1), std::memory_order_release);
    return removed;
}

// The shortest key s with left < s <= right (left < right): right cut just
// past the first byte where they differ. Keeps long keys out of inner nodes.
const KeyBlob* makeSeparator(std::string_view left, std::string_view right) {
    size_t common = 0;
    size_t limit = std::min(left.size(), right.size());
    while (common < limit && left[common] == right[common]) {
        ++common;
    }
    assert(common < right.size());
    return KeyBlob::make(right.substr(0, common + 1));
}

struct Split {
    const KeyBlob* separator;
    Node* right;
};

// Moves entries [mid, n) of a locked, full leaf into a new leaf (0 < mid < n).
Split splitLeaf(Leaf* leaf, int mid) {
    int n = leaf->count.load(std::memory_order_relaxed);
    assert(mid > 0 && mid < n);
    auto* right = new Leaf;
    for (int i = mid; i < n; ++i) {
        right->keys.copyFrom(i - mid, leaf->keys, i);
        right->values[i - mid].store(leaf->values[i].load(std::memory_order_relaxed),
                                     std::memory_order_relaxed);
    }
    right->count.store(static_cast<uint16_t>(n - mid), std::memory_order_relaxed);
    right->next.store(leaf->next.load(std::memory_order_relaxed), std::memory_order_relaxed);
    leaf->count.store(static_cast<uint16_t>(mid), std::memory_order_release);
    // Release: a reader that loads the link sees the new leaf's contents.
    leaf->next.store(right, std::memory_order_release);
    char left[kInlineKeyBytes], first[kInlineKeyBytes];
    const KeyBlob* sep =
        makeSeparator(leaf->keys.keyAt(mid - 1, left), right->keys.keyAt(0, first));
    return {sep, right};
}

// Moves the upper half of a locked, full inner node into a new one; the middle
// key moves up (its blob changes owner, no copy).
Split splitInner(Inner* inner) {
    int n = inner->count.load(std::memory_order_relaxed);
    int mid = n / 2;
    auto* right = new Inner;
    for (int i = mid + 1; i < n; ++i) {
        right->keys.copyFrom(i - mid - 1, inner->keys, i);
    }
    for (int i = mid + 1; i <= n; ++i) {
        right->children[i - mid - 1].store(inner->children[i].load(std::memory_order_relaxed),
                                           std::memory_order_relaxed);
    }
    right->count.store(static_cast<uint16_t>(n - mid - 1), std::memory_order_relaxed);
    const KeyBlob* sep = inner->keys.blob[mid].load(std::memory_order_relaxed);
    inner->count.store(static_cast<uint16_t>(mid), std::memory_order_release);
    return {sep, right};
}

// Links a split's right half into its locked parent, which has room.
void innerInsert(Inner* parent, const Split& split) {
    int n = parent->count.load(std::memory_order_relaxed);
    assert(n < Inner::kCapacity);
    SearchKey k(split.separator->view());
    int pos = parent->keys.upperBound(n, k);
    for (int i = n; i > pos; --i) {
        parent->keys.copyFrom(i, parent->keys, i - 1);
        parent->children[i + 1].store(parent->children[i].load(std::memory_order_relaxed),
                                      std::memory_order_release);
    }
    parent->keys.set(pos, split.separator);
    // Release: a reader that loads the pointer sees the new node's contents.
    parent->children[pos + 1].store(split.right, std::memory_order_release);
    parent->count.store(static_cast<uint16_t>(n + 1), std::memory_order_release);
}

// The locked root `left` split: a new root above it and the split's right
// half. Readers that read the old root's version before the split fail to
// validate it; later ones re-check the root pointer and restart.
void growRoot(std::atomic<Node*>& rootPtr, Node* left, const Split& split) {
    auto* root = new Inner;
    root->keys.set(0, split.separator);
    root->children[0].store(left, std::memory_order_relaxed);
    root->children[1].store(split.right, std::memory_order_relaxed);
    root->count.store(1, std::memory_order_relaxed);
    rootPtr.store(root, std::memory_order_release);  // publishes the fields above
}

// Write-locks a node read at version v for its split, and its parent read at
// pv (nullptr when the node is the root). False if either changed since;
// nothing is left locked then and the caller restarts.
bool lockForSplit(Inner* parent, uint64_t pv, Node* node, uint64_t v) {
    if (parent != nullptr && !upgradeToWrite(parent, pv)) {
        return false;
    }
    if (!upgradeToWrite(node, v)) {
        if (parent != nullptr) {
            writeUnlock(parent);
        }
        return false;
    }
    return true;
}

// Links the split of `node` into its parent (or above it, when it is the root)
// and releases the locks lockForSplit took.
void linkSplitAndUnlock(std::atomic<Node*>& rootPtr, Inner* parent, Node* node,
                        const Split& split) {
    if (parent != nullptr) {
        innerInsert(parent, split);
    } else {
        // node is still the root: the root changes only under its lock.
        growRoot(rootPtr, node, split);
    }
    writeUnlock(node);
    if (parent != nullptr) {
        writeUnlock(parent);
    }
}

// One optimistic descent to the leaf that holds (or would hold) k, and k's
// slot there: `pos`, and whether the key is present (`equal`); the leaf's
// version in `v`. Null on a conflict (the caller restarts).
Leaf* findSlot(const std::atomic<Node*>& root, const SearchKey& k, uint64_t& v, int& pos,
               bool& equal) {
    Leaf* leaf = descendToKey(root, k, v);
    if (leaf != nullptr) {
        pos = leaf->keys.lowerBound(readCount(leaf, Leaf::kCapacity), k, equal);
    }
    return leaf;
}

// Stripe for this thread's size updates.
int sizeStripe() {
    static std::atomic<int> next{0};
    thread_local int stripe = next.fetch_add(1, std::memory_order_relaxed);
    return stripe;
}

}  // namespace

BTree::BTree(EpochManager& epochs) : epochs_(epochs), root_(new Leaf) {}

BTree::~BTree() {
    freeSubtree(root_.load(std::memory_order_relaxed));
}

void BTree::freeSubtree(Node* node) {
    if (node->isLeaf) {
        Leaf* leaf = asLeaf(node);
        int n = leaf->count.load(std::memory_order_relaxed);
        for (int i = 0; i < n; ++i) {
            KeyBlob::destroy(const_cast<KeyBlob*>(leaf->keys.blobAt(i)));
        }
        delete leaf;
        return;
    }
    Inner* inner = asInner(node);
    int n = inner->count.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
        KeyBlob::destroy(const_cast<KeyBlob*>(inner->keys.blobAt(i)));
    }
    for (int i = 0; i <= n; ++i) {
        freeSubtree(inner->children[i].load(std::memory_order_relaxed));
    }
    delete inner;
}

void BTree::addToSize(int64_t delta) {
    size_[sizeStripe() % kSizeStripes].n.fetch_add(delta, std::memory_order_relaxed);
}

size_t BTree::size() const {
    int64_t total = 0;
    for (const Stripe& s : size_) {
        total += s.n.load(std::memory_order_relaxed);
    }
    return total < 0 ? 0 : static_cast<size_t>(total);
}

std::optional<BTree::Value> BTree::find(std::string_view key, Hint* hint) const {
    auto guard = epochs_.pin();
    SearchKey k(key);
    for (Restarter backoff;; backoff.pause()) {
        uint64_t v;
        Leaf* leaf = descendToKey(root_, k, v);
        if (leaf == nullptr) {
            continue;
        }
        int count = readCount(leaf, Leaf::kCapacity);
        // The prefix search (its lines are prefetched) names the candidate
        // slot; load its length, infix and value together rather than as
        // three misses one after another in the compare below. Every slot
        // before the candidate has a smaller prefix, so the full search
        // starts there instead of searching the whole leaf again.
        int candidate = leaf->keys.lowerBoundPrefix(count, k);
        if (candidate < count) {
            leaf->keys.prefetchSlot(candidate);
            __builtin_prefetch(&leaf->values[candidate]);
        }
        bool equal;
        int pos = leaf->keys.lowerBound(count, k, equal, candidate);
        Value value = equal ? leaf->values[pos].load(std::memory_order_acquire) : nullptr;
        if (!validate(leaf, v)) {
            continue;
        }
        if (hint != nullptr) {
            *hint = equal ? Hint{leaf, v, pos} : Hint{};
        }
        if (!equal) {
            return std::nullopt;
        }
        return value;
    }
}

bool BTree::compareExchange(std::string_view key, std::optional<Value>& expected, Value desired,
                            Hint* hint) {
    if (!expected) {
        auto [current, inserted] = insertIfAbsent(key, desired);
        if (!inserted) {
            expected = current;
        }
        if (hint != nullptr) {
            *hint = Hint{};
        }
        return inserted;
    }
    auto guard = epochs_.pin();
    // Swaps the value in `slot` of `leaf`, which the caller locked at a
    // version where the slot holds `key`; unlocks and records the new version.
    auto swapLocked = [&](Leaf* leaf, int slot) {
        Value current = leaf->values[slot].load(std::memory_order_relaxed);
        bool swapped = current == *expected;
        if (swapped) {
            leaf->values[slot].store(desired, std::memory_order_release);
        } else {
            expected = current;
        }
        uint64_t locked = leaf->version.load(std::memory_order_relaxed);
        writeUnlock(leaf);
        if (hint != nullptr) {
            *hint = Hint{leaf, locked + kLockedBit, slot};
        }
        return swapped;
    };
    // The hint's leaf unchanged since: its slot still holds the key.
    if (hint != nullptr && hint->slot >= 0) {
        Leaf* leaf = static_cast<Leaf*>(hint->leaf);
        if (upgradeToWrite(leaf, hint->version)) {
            return swapLocked(leaf, hint->slot);
        }
    }
    SearchKey k(key);
    for (Restarter backoff;; backoff.pause()) {
        uint64_t v;
        int pos;
        bool equal;
        Leaf* leaf = findSlot(root_, k, v, pos, equal);
        if (leaf == nullptr) {
            continue;
        }
        if (!equal) {
            if (!validate(leaf, v)) {
                continue;
            }
            expected = std::nullopt;
            if (hint != nullptr) {
                *hint = Hint{};
            }
            return false;
        }
        if (!upgradeToWrite(leaf, v)) {
            continue;
        }
        return swapLocked(leaf, pos);
    }
}

std::pair<BTree::Value, bool> BTree::insertIfAbsent(std::string_view key, Value value) {
    assert(key.size() <= UINT32_MAX);
    auto guard = epochs_.pin();
    SearchKey k(key);
    // A long key's copy is made outside the latch, once, and kept across restarts.
    const KeyBlob* blob = nullptr;
    const bool needsBlob = key.size() > kInlineKeyBytes;
    for (Restarter backoff;; backoff.pause()) {
        // The leaf's parent as the descent read it (nullptr: the leaf is the root).
        Inner* parent = nullptr;
        uint64_t pv = 0;
        uint64_t v;
        Leaf* leaf = descend(root_, v, [&](Inner* inner, uint64_t iv, int n) {
            if (n == Inner::kCapacity) {
                // Split full inner nodes on the way down, so that a child's
                // split always finds room in its parent. Then start over.
                if (lockForSplit(parent, pv, inner, iv)) {
                    linkSplitAndUnlock(root_, parent, inner, splitInner(inner));
                }
                return -1;
            }
            parent = inner;
            pv = iv;
            return inner->keys.upperBound(n, k);
        });
        if (leaf == nullptr) {
            continue;
        }
        int n = readCount(leaf, Leaf::kCapacity);
        bool equal;
        int pos = leaf->keys.lowerBound(n, k, equal);
        if (equal) {
            Value current = leaf->values[pos].load(std::memory_order_acquire);
            if (!validate(leaf, v)) {
                continue;
            }
            if (blob != nullptr) {
                KeyBlob::destroy(const_cast<KeyBlob*>(blob));  // never published
            }
            return {current, false};
        }
        if (needsBlob && blob == nullptr) {
            blob = KeyBlob::make(key);  // the upgrade below still checks nothing changed
        }
        if (n < Leaf::kCapacity) {
            if (!upgradeToWrite(leaf, v)) {
                continue;
            }
            // The version did not change since pos was computed: it holds.
            leafInsertAt(leaf, pos, key, blob, value);
            writeUnlock(leaf);
            addToSize(1);
            return {value, true};
        }

        // Full leaf: split it under its parent's lock, insert into the right half.
        if (!lockForSplit(parent, pv, leaf, v)) {
            continue;
        }
        // An insert past the leaf's last key (ascending keys: a sequential
        // load, a time series) keeps the left leaf full and moves only its
        // last entry, as LMDB and WiredTiger do on append; halving would
        // leave every leaf of such a load half empty.
        Split split = splitLeaf(leaf, pos == n ? n - 1 : n / 2);
        Leaf* target = compareBytes(key, split.separator->view()) < 0 ? leaf : asLeaf(split.right);
        bool unused;
        int at = target->keys.lowerBound(target->count.load(std::memory_order_relaxed), k, unused);
        leafInsertAt(target, at, key, blob, value);
        linkSplitAndUnlock(root_, parent, leaf, split);
        addToSize(1);
        return {value, true};
    }
}

bool BTree::remove(std::string_view key) {
    return removeImpl(key, false, nullptr);
}

bool BTree::removeIf(std::string_view key, Value expected) {
    return removeImpl(key, true, expected);
}

bool BTree::removeImpl(std::string_view key, bool checkValue, Value expected) {
    auto guard = epochs_.pin();
    SearchKey k(key);
    for (Restarter backoff;; backoff.pause()) {
        uint64_t v;
        int pos;
        bool equal;
        Leaf* leaf = findSlot(root_, k, v, pos, equal);
        if (leaf == nullptr) {
            continue;
        }
        Value current = equal ? leaf->values[pos].load(std::memory_order_acquire) : nullptr;
        if (!equal || (checkValue && current != expected)) {
            if (!validate(leaf, v)) {
                continue;
            }
            return false;
        }
        if (!upgradeToWrite(leaf, v)) {
            continue;
        }
        const KeyBlob* removed = leafRemoveAt(leaf, pos);
        writeUnlock(leaf);
        // Readers that loaded the pointer before the unlock may still compare
        // against it: free it only when they are gone.
        if (removed != nullptr)
            epochs_.retire(const_cast<KeyBlob*>(removed), &KeyBlob::destroy);
        addToSize(-1);
        return true;
    }
}

namespace {

struct StatsWalk {
    BTree::Stats stats{};

    // Snapshots one node under validation, then recurses into its children.
    void visit(Node* node, size_t depth) {
        stats.height = std::max(stats.height, depth);
        std::vector<Node*> children;
        size_t keyBytes;
        for (Restarter backoff;; backoff.pause()) {
            uint64_t v;
            if (!readLock(node, v)) {
                continue;
            }
            children.clear();
            keyBytes = 0;
            if (node->isLeaf) {
                Leaf* leaf = asLeaf(node);
                int n = readCount(leaf, Leaf::kCapacity);
                for (int i = 0; i < n; ++i) {
                    const KeyBlob* b = leaf->keys.blobAt(i);
                    keyBytes += b != nullptr ? b->allocatedBytes() : 0;
                }
            } else {
                Inner* inner = asInner(node);
                int n = readCount(inner, Inner::kCapacity);
                for (int i = 0; i < n; ++i) {
                    const KeyBlob* b = inner->keys.blobAt(i);
                    keyBytes += b != nullptr ? b->allocatedBytes() : 0;
                }
                for (int i = 0; i <= n; ++i) {
                    children.push_back(inner->children[i].load(std::memory_order_acquire));
                }
            }
            if (validate(node, v)) {
                break;
            }
        }
        stats.bytes += keyBytes + (node->isLeaf ? sizeof(Leaf) : sizeof(Inner));
        if (node->isLeaf) {
            ++stats.leafNodes;
            return;
        }
        ++stats.innerNodes;
        for (Node* child : children) {
            if (child != nullptr) {
                visit(child, depth + 1);
            }
        }
    }
};

}  // namespace

BTree::Stats BTree::stats() const {
    auto guard = epochs_.pin();
    StatsWalk walk;
    walk.visit(loadRoot(), 1);
    walk.stats.keys = size();
    return walk.stats;
}

}  // namespace mvkv
