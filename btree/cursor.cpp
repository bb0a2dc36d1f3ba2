// BTree::Cursor: iteration by leaf-sized batches.
//
// fill() descends to the leaf that may hold the wanted key, copies the
// matching part of that leaf under validation and, when nothing there
// matches (an empty leaf, or the key is past the leaf's last entry),
// continues from the fence of that leaf: the nearest separator to its right
// (forward) or left (backward) on the way down. Every step therefore moves
// strictly forward or backward in key space, so concurrent splits can
// neither make it loop nor skip or repeat a key.
//
// A forward scan's next batch skips the descent while it can
// (continueForward): as long as the batch's leaf keeps the version it was
// copied at, no key has entered or left it since, so its remaining slots
// are the next keys, and past its last slot the next keys are in the leaf
// its link names (leaves have right links, set under the latch by splits).
// Any change to the leaf sends the scan back to fill().
#include <algorithm>
#include <cstring>

#include "btree/btree.h"
#include "btree/node.h"

namespace mvkv {

using namespace btree_detail;

namespace {
// Room a batch keeps per key is kInlineKeyBytes (node.h): keys up to that
// long are copied from the inline words with two 8-byte stores
// (KeySlots::copyKey).
// The first batch after a seek: a point seek followed by a few next() calls
// (the common short range read) should not copy the whole rest of a leaf.
// Later batches, from next()/prev(), take the leaf's remainder.
constexpr int kSeekBatch = 16;
constexpr int kWholeLeaf = 1 << 30;
}  // namespace

BTree::Cursor::Cursor(const BTree& tree) : tree_(&tree) {
    keyOffsets_.push_back(0);
}

void BTree::Cursor::seek(std::string_view key) {
    target_.assign(key.data(), key.size());  // before fill() reuses keyBytes_: key may point there
    fill(target_, Mode::kGE, kSeekBatch);
}

void BTree::Cursor::seekForPrev(std::string_view key) {
    target_.assign(key.data(), key.size());
    fill(target_, Mode::kLE, kSeekBatch);
}

void BTree::Cursor::seekFirst() {
    target_.clear();  // the empty key sorts first
    fill(target_, Mode::kGE, kSeekBatch);
}

void BTree::Cursor::seekLast() {
    target_.clear();
    fill(target_, Mode::kLast, kSeekBatch);
}

void BTree::Cursor::next() {
    if (!valid() || nextInBatch()) {
        return;
    }
    target_.assign(key());  // before continueForward overwrites the batch
    if (continueForward()) {
        return;
    }
    fill(target_, Mode::kGT, kWholeLeaf);
}

void BTree::Cursor::prev() {
    if (!valid() || prevInBatch()) {
        return;
    }
    target_.assign(key());
    fill(target_, Mode::kLT, kWholeLeaf);
}

void BTree::Cursor::stepFromTree(bool forward) {
    if (!valid())
        return;
    target_.assign(key());
    fill(target_, forward ? Mode::kGT : Mode::kLT, kWholeLeaf);
}

void BTree::Cursor::fill(std::string_view target, Mode mode, int limit) {
    const bool forward = mode == Mode::kGE || mode == Mode::kGT;
    auto guard = tree_->epochs_.pin();
    for (Restarter backoff;; backoff.pause()) {
        keyOffsets_.resize(1);  // keyBytes_ keeps its size: it is written by offset
        count_ = 0;
        pos_ = 0;
        SearchKey k(target);

        const KeyBlob* fenceBlob = nullptr;
        uint64_t v;
        ++descents_;
        Leaf* leaf = descend(tree_->root_, v, [&](Inner* inner, uint64_t, int n) {
            int pos;
            switch (mode) {
                case Mode::kLT: {
                    // The child holding keys just below target: key[pos-1] < target <= key[pos].
                    bool unused;
                    pos = inner->keys.lowerBound(n, k, unused);
                    break;
                }
                case Mode::kLast:
                    pos = n;
                    break;
                default:  // the child whose range contains target
                    pos = inner->keys.upperBound(n, k);
                    break;
            }
            if (forward && pos < n) {
                fenceBlob = inner->keys.blobAt(pos);
            } else if (!forward && pos > 0) {
                fenceBlob = inner->keys.blobAt(pos - 1);
            }
            return pos;
        });
        if (leaf == nullptr) {
            continue;
        }

        int n = readCount(leaf, Leaf::kCapacity);
        int begin = 0;
        int end = n;
        bool equal;
        switch (mode) {
            case Mode::kGE:
                begin = leaf->keys.lowerBound(n, k, equal);
                break;
            case Mode::kGT:
                begin = leaf->keys.upperBound(n, k);
                break;
            case Mode::kLE:
                end = leaf->keys.upperBound(n, k);
                break;
            case Mode::kLT:
                end = leaf->keys.lowerBound(n, k, equal);
                break;
            case Mode::kLast:
                break;
        }
        // At most `limit` entries, the nearest ones in the direction of travel.
        if (end - begin > limit) {
            if (forward)
                end = begin + limit;
            else
                begin = end - limit;
        }
        end = std::max(begin, end);
        if (!copyKeys(leaf, begin, end) || !validate(leaf, v)) {
            continue;
        }
        setBatch(leaf, v, begin, end, forward);
        if (count_ > 0) {
            return;
        }
        if (fenceBlob == nullptr) {
            return;  // nothing further in this direction: invalid
        }
        // Separators are never freed while the tree lives, and the pointer
        // was read under a validated version: the bytes are the fence's.
        fence_.assign(fenceBlob->data(), fenceBlob->len);
        target_.swap(fence_);
        target = target_;
        mode = forward ? Mode::kGE : Mode::kLT;
    }
}

bool BTree::Cursor::copyKeys(const void* leafPtr, int begin, int end) {
    const Leaf* leaf = static_cast<const Leaf*>(leafPtr);
    // Plain stores into a buffer sized once for 16-byte keys, grown only for
    // longer ones.
    const size_t span = size_t(end - begin);
    keyOffsets_.resize(span + 1);
    keyBytes_.resize(std::max(keyBytes_.size(), span * kInlineKeyBytes));
    size_t used = 0;
    for (int i = begin; i < end; ++i) {
        size_t room = keyBytes_.size() - used;
        if (room < kInlineKeyBytes) {
            // Longer keys before this one used up the room of the rest.
            keyBytes_.resize(used + size_t(end - i) * kInlineKeyBytes);
            room = keyBytes_.size() - used;
        }
        int64_t copied = leaf->keys.copyKey(i, keyBytes_.data() + used, room);
        if (copied > int64_t(room)) {
            // A long key: grow (for the rest as well) and copy it again.
            keyBytes_.resize(used + size_t(copied) + size_t(end - i) * kInlineKeyBytes);
            room = keyBytes_.size() - used;
            copied = leaf->keys.copyKey(i, keyBytes_.data() + used, room);
        }
        if (copied < 0 || copied > int64_t(room)) {
            return false;  // torn
        }
        used += size_t(copied);
        keyOffsets_[size_t(i - begin) + 1] = static_cast<uint32_t>(used);
    }
    return true;
}

void BTree::Cursor::setBatch(const void* leafPtr, uint64_t version, int begin, int end,
                             bool forward) {
    const Leaf* leaf = static_cast<const Leaf*>(leafPtr);
    count_ = size_t(end - begin);
    leaf_ = leaf;
    leafVersion_ = version;
    batchEnd_ = end;
    batchValues_ = leaf->values + begin;
    pos_ = forward || count_ == 0 ? 0 : count_ - 1;
    if (count_ > 0) {
        // The first entries the scan will read, nearest first.
        for (size_t i = 0; i < std::min(count_, kPrefetchAhead + 1); ++i)
            prefetchValue(forward ? i : count_ - 1 - i);
    }
}

bool BTree::Cursor::continueForward() {
    // Any batch will do, a backward one too: slots [batchEnd_, n) of its
    // unchanged leaf are the keys after the batch's last.
    if (leaf_ == nullptr) {
        return false;
    }
    auto guard = tree_->epochs_.pin();  // copyKey may read a long key's blob
    const Leaf* leaf = static_cast<const Leaf*>(leaf_);
    uint64_t v = leafVersion_;
    int from = batchEnd_;
    while (true) {
        // Unchanged at v since the batch was copied (checked below): the same
        // count, and slots [from, n) hold the keys after the batch's last.
        const int n = readCount(leaf, Leaf::kCapacity);
        if (from < n) {
            if (!copyKeys(leaf, from, n) || !validate(leaf, v)) {
                return false;
            }
            setBatch(leaf, v, from, n, true);
            return true;
        }
        // Nothing left here: the next keys are in the right neighbour, the
        // leaf that begins at this leaf's high fence (a leaf's low fence
        // never moves: a split only lowers the splitting leaf's high fence).
        // Its version is read before this leaf is validated, so the link
        // was this leaf's at a moment when the neighbour was at that
        // version, and its copy, validated at that version, holds the keys
        // after this leaf's.
        const Leaf* right = leaf->next.load(std::memory_order_acquire);
        uint64_t rv = 0;
        if (right != nullptr) {
            prefetchNode(right);
            if (!readLock(right, rv)) {
                return false;
            }
        }
        if (!validate(leaf, v)) {
            return false;
        }
        if (right == nullptr) {
            // The last leaf, unchanged: no key after the batch's last.
            setBatch(leaf, v, from, from, true);
            return true;
        }
        leaf = right;
        v = rv;
        from = 0;
    }
}

BTree::Value BTree::Cursor::value() const {
    // While the leaf keeps the version the batch was copied at, entry pos_
    // is still in batchValues_[pos_] (nodes are never freed while the
    // tree lives, so the pointer is safe to read). Any write to the leaf
    // (even the value swap of another key) sends us to a fresh lookup.
    const Leaf* leaf = static_cast<const Leaf*>(leaf_);
    if (leaf->version.load(std::memory_order_acquire) == leafVersion_) {
        Value value = batchValues_[pos_].load(std::memory_order_acquire);
        if (validate(leaf, leafVersion_)) {
            return value;
        }
    }
    std::optional<Value> now = tree_->find(key());
    return now ? *now : nullptr;
}

}  // namespace mvkv
