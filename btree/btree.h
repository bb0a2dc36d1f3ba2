// BTree: a concurrent in-memory B+tree from byte-string keys to opaque
// pointer-sized values, with optimistic lock coupling (Leis et al., "The ART
// of practical synchronization", 2016). docs/btree.md has the protocol.
//
// Keys: byte strings of any length (designed and tested up to 64 KiB; the
// limit is 4 GiB - 1), compared in memcmp order, a prefix sorting first. The
// tree copies them (into the leaf slot for keys of up to 16 bytes, else
// immutable heap blobs); the caller's buffer is not kept.
//
// Values: the caller's pointers. The tree stores and returns them and never
// dereferences or frees them; the caller keeps them alive.
//
// Thread safety: every method of BTree may be called from any number of
// threads at once. Readers (find, Cursor) take no latch and never write
// shared memory; a reader retries when a writer changed the node it was
// reading. Writers latch only the nodes they change. Every public call pins
// the EpochManager internally.
//
// What a reader may rely on:
// - find() and a cursor step are each linearizable: they reflect the tree as
//   it was at one instant during the call. (A step that crosses empty leaves
//   reads each leaf at its own instant; it still skips no key present
//   throughout the step.)
// - A cursor sees keys in strictly increasing (next) or decreasing (prev)
//   order and never a torn key; a key inserted or removed concurrently may or
//   may not be seen. Cursors survive any concurrent split.
// - A Value obtained from find() or a cursor stays usable while the caller
//   holds `epochs.pin()` (taken before the lookup) *if* whoever removes the
//   mapping retires the value through the same EpochManager. The tree itself
//   does nothing to values.
//
// Memory: nodes split but never merge. Removing keys leaves underfull or even
// empty leaves in place (iteration skips them); the memory comes back only
// when the tree is destroyed. Key blobs of removed keys are retired through
// the EpochManager at once.
//
// Errors: none are reported; allocation failure is fatal, as elsewhere in mvkv.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/epoch.h"

namespace mvkv {

namespace btree_detail {
struct Node;
struct SearchKey;
}  // namespace btree_detail

class BTree {
  public:
    /// Opaque pointer-sized payload; the tree never dereferences or frees it.
    using Value = void*;

    /// Entries per node: keys per leaf, separator keys per inner node.
    static constexpr int kLeafCapacity = 64;
    static constexpr int kInnerCapacity = 64;

    /// Nodes and key copies are retired through `epochs`, which must outlive
    /// the tree.
    explicit BTree(EpochManager& epochs);
    /// Frees nodes and keys (not values). No other thread may use the tree then.
    ~BTree();
    BTree(const BTree&) = delete;
    BTree& operator=(const BTree&) = delete;

    /// Where a find() found its key: lets a following compareExchange() of
    /// the same key skip its descent while the leaf is unchanged since (the
    /// write path of an update chain: read the head, then swap it). Opaque;
    /// for one tree and one key; stale hints are detected, never trusted.
    struct Hint {
        void* leaf = nullptr;
        uint64_t version = 0;
        int slot = -1;  // -1: no usable position
    };

    /// The value mapped to `key`, if any. Fills `hint` when given.
    std::optional<Value> find(std::string_view key, Hint* hint = nullptr) const;

    /// Atomically: if `key` is mapped to *expected (or, when `expected` is
    /// nullopt, is absent), maps it to `desired` (inserting it when absent)
    /// and returns true. Otherwise changes nothing, stores what is there now
    /// in `expected` (nullopt: absent) and returns false: a compare-and-swap
    /// of a key's value, done under the leaf's latch so that no concurrent
    /// split or shift of the leaf can lose it. `hint`, from a find() or an
    /// earlier compareExchange() of the same key, saves the descent.
    bool compareExchange(std::string_view key, std::optional<Value>& expected, Value desired,
                         Hint* hint = nullptr);

    /// Inserts key -> value if key is absent. Returns {the value now mapped to
    /// key, true if this call inserted it}. Exactly one of several concurrent
    /// callers with the same absent key wins.
    std::pair<Value, bool> insertIfAbsent(std::string_view key, Value value);

    /// Removes `key`; true if it was present.
    bool remove(std::string_view key);

    /// Removes `key` only if it is mapped to `expected`; true if it removed it.
    /// (The history store's sweep uses it to drop an entry nobody replaced.)
    bool removeIf(std::string_view key, Value expected);

    /// Number of keys: exact when no writer is running, else approximate.
    size_t size() const;

    struct Stats {
        size_t keys;    // as size()
        size_t height;  // levels, 1 for a tree that is one leaf
        size_t innerNodes;
        size_t leafNodes;  // including empty ones
        size_t bytes;      // nodes plus key copies
    };
    /// Walks the whole tree: O(n). Exact when quiescent, approximate otherwise.
    Stats stats() const;

    /// Iterates in key order. A cursor copies one leaf's entries at a time into
    /// its own buffer (under validation). Past the buffer, a forward scan
    /// goes on in the same leaf or the next by its sibling link while that
    /// leaf is unchanged since, and otherwise re-seeks from the last key it
    /// returned, so concurrent writers never break it.
    ///
    /// Thread safety: a Cursor itself is for one thread at a time; any number
    /// of cursors may run concurrently with writers. It must not outlive the
    /// tree. key() and value() require valid().
    class Cursor {
      public:
        explicit Cursor(const BTree& tree);
        /// Unpositioned on `tree`, keeping the buffers' capacity: a cursor
        /// object reused for another iteration allocates nothing more.
        void reset(const BTree& tree) {
            tree_ = &tree;
            leaf_ = nullptr;
            count_ = 0;
            pos_ = 0;
            keyOffsets_.resize(1);  // count_ + 1 offsets; keeps its capacity
        }
        /// Descents from the root this cursor has made: one per seek (more
        /// when it retries or crosses empty leaves), plus one per step the
        /// batch and the leaves' links could not serve (a changed leaf, a
        /// backward step). A full forward scan of a tree nobody writes makes
        /// one (when its first leaf is not empty).
        uint64_t descents() const { return descents_; }
        /// Heap bytes the cursor's buffers hold (their capacity).
        size_t bufferBytes() const {
            return keyBytes_.capacity() + keyOffsets_.capacity() * sizeof(uint32_t) +
                   target_.capacity() + fence_.capacity();
        }

        /// First key >= key.
        void seek(std::string_view key);
        /// Last key <= key.
        void seekForPrev(std::string_view key);
        void seekFirst();
        void seekLast();

        bool valid() const { return pos_ < count_; }
        /// Next key strictly greater than key(); invalid at the end.
        void next();
        /// next() when the batch already holds the next entry: true and
        /// moved, without touching the tree. False, and the cursor stays
        /// where it is, when next() would have to load a batch.
        bool nextInBatch() {
            if (pos_ + 1 >= count_)
                return false;
            ++pos_;
            prefetchValue(pos_ + kPrefetchAhead);
            return true;
        }
        /// prev()'s counterpart of nextInBatch().
        bool prevInBatch() {
            if (pos_ == 0 || pos_ >= count_)
                return false;
            --pos_;
            if (pos_ >= kPrefetchAhead)
                prefetchValue(pos_ - kPrefetchAhead);
            return true;
        }
        /// Previous key strictly less than key(); invalid at the start.
        void prev();
        /// next() or prev() that ignores the batch and loads a fresh one from
        /// the tree just past key(): for a caller whose own writes since the
        /// batch was copied may have added keys inside it.
        void stepFromTree(bool forward);

        /// Valid until the cursor moves.
        std::string_view key() const {
            return std::string_view(keyBytes_.data() + keyOffsets_[pos_],
                                    keyOffsets_[pos_ + 1] - keyOffsets_[pos_]);
        }
        /// The value mapped to key() now (not when the cursor got there:
        /// read live from the leaf, or looked up again if the leaf changed
        /// since), or nullptr if key() was removed since. The caller pins
        /// the EpochManager around the call and its use of the result, as
        /// for find().
        Value value() const;

      private:
        enum class Mode { kGE, kGT, kLE, kLT, kLast };
        // Loads the batch: up to `limit` entries next to `target` in `mode`.
        void fill(std::string_view target, Mode mode, int limit);
        // next() past the batch without a descent: the rest of the batch's
        // leaf, or the leaves to its right by their links, while the leaf is
        // unchanged since the batch was copied. False when it changed (the
        // caller descends with fill()); the batch is then undefined.
        bool continueForward();
        // Copies the keys of leaf slots [begin, end) into the batch; false on
        // torn state (the caller's validation would fail anyway).
        bool copyKeys(const void* leaf, int begin, int end);
        // The batch is slots [begin, end) of `leaf`, copied at `version`.
        void setBatch(const void* leaf, uint64_t version, int begin, int end, bool forward);

        // A scan's values are pointers to objects spread over the heap (for
        // mvkv, version chains): one DRAM miss per entry that no hardware
        // prefetcher predicts. The cursor asks for entry i's object this
        // many steps before it is read, so the misses of a scan overlap
        // instead of adding up. A hint only: the slot is read racily (nodes
        // live as long as the tree) and a stale or freed pointer is never
        // dereferenced, only prefetched, which cannot fault.
        static constexpr size_t kPrefetchAhead = 8;
        void prefetchValue(size_t i) const {
            if (i < count_) {
                const char* p = static_cast<const char*>(
                    batchValues_[i].load(std::memory_order_relaxed));
                if (p != nullptr) {
                    __builtin_prefetch(p);
                    // A small value's bytes follow its header. Integer
                    // arithmetic: the object may be shorter than 64 bytes.
                    __builtin_prefetch(
                        reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + 64));
                }
            }
        }

        const BTree* tree_;
        // The batch: entries [0, count_) of one leaf, in key order; pos_ is
        // the current one (count_ when invalid).
        std::string keyBytes_;
        std::vector<uint32_t> keyOffsets_;  // count_ + 1 offsets into keyBytes_
        // Where the batch came from, for value(): the leaf (nodes live as
        // long as the tree), its version then, and the slot of entry 0.
        const void* leaf_ = nullptr;
        uint64_t leafVersion_ = 0;
        int batchEnd_ = 0;           // the leaf slot just past the batch
        const std::atomic<Value>* batchValues_ = nullptr;  // value() and the prefetch read it
        size_t count_ = 0;
        size_t pos_ = 0;
        uint64_t descents_ = 0;
        std::string target_;  // reused seek key
        std::string fence_;   // reused: where to continue past an exhausted leaf
    };

  private:
    friend class Cursor;
    using Node = btree_detail::Node;
    using SearchKey = btree_detail::SearchKey;

    Node* loadRoot() const { return root_.load(std::memory_order_acquire); }
    bool removeImpl(std::string_view key, bool checkValue, Value expected);
    void addToSize(int64_t delta);
    void freeSubtree(Node* node);

    EpochManager& epochs_;
    std::atomic<Node*> root_;
    // Key count, striped so that writers on different threads do not share a
    // cache line for it.
    static constexpr int kSizeStripes = 8;
    struct alignas(64) Stripe {
        std::atomic<int64_t> n{0};
    };
    Stripe size_[kSizeStripes];
};

}  // namespace mvkv
