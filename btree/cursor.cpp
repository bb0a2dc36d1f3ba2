// BTree::Cursor: iteration by leaf-sized batches.
//
// There are no sibling links. fill() descends to the leaf that may hold the
// wanted key, copies the matching part of that leaf under validation and,
// when nothing there matches (an empty leaf, or the key is past the leaf's
// last entry), continues from the fence of that leaf: the nearest separator
// to its right (forward) or left (backward) on the way down. Every step
// therefore moves strictly forward or backward in key space, so concurrent
// splits can neither make it loop nor skip or repeat a key.
#include <cstring>

#include "btree/btree.h"
#include "btree/node.h"

namespace mvkv {

using namespace btree_detail;

BTree::Cursor::Cursor(const BTree& tree) : tree_(&tree) {
    keyOffsets_.push_back(0);
}

void BTree::Cursor::seek(std::string_view key) {
    target_.assign(key.data(), key.size());  // before fill() reuses keyBytes_: key may point there
    fill(target_, Mode::kGE);
}

void BTree::Cursor::seekForPrev(std::string_view key) {
    target_.assign(key.data(), key.size());
    fill(target_, Mode::kLE);
}

void BTree::Cursor::seekFirst() {
    target_.clear();  // the empty key sorts first
    fill(target_, Mode::kGE);
}

void BTree::Cursor::seekLast() {
    target_.clear();
    fill(target_, Mode::kLast);
}

void BTree::Cursor::next() {
    if (!valid()) {
        return;
    }
    if (pos_ + 1 < count_) {
        ++pos_;
        return;
    }
    target_.assign(key());
    fill(target_, Mode::kGT);
}

void BTree::Cursor::prev() {
    if (!valid()) {
        return;
    }
    if (pos_ > 0) {
        --pos_;
        return;
    }
    target_.assign(key());
    fill(target_, Mode::kLT);
}

void BTree::Cursor::fill(std::string_view target, Mode mode) {
    const bool forward = mode == Mode::kGE || mode == Mode::kGT;
    auto guard = tree_->epochs_.pin();
    for (Restarter backoff;; backoff.pause()) {
        keyBytes_.clear();
        keyOffsets_.resize(1);
        values_.clear();
        count_ = 0;
        pos_ = 0;
        SearchKey k(target);

        const KeyBlob* fenceBlob = nullptr;
        uint64_t v;
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
        bool restart = false;
        for (int i = begin; i < end; ++i) {
            if (!leaf->keys.appendKey(i, keyBytes_)) {
                restart = true;  // torn: validation below would fail anyway
                break;
            }
            keyOffsets_.push_back(static_cast<uint32_t>(keyBytes_.size()));
            values_.push_back(leaf->values[i].load(std::memory_order_acquire));
        }
        if (restart || !validate(leaf, v)) {
            continue;
        }
        count_ = values_.size();
        if (count_ > 0) {
            pos_ = forward ? 0 : count_ - 1;
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

}  // namespace mvkv
