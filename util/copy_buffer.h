// CopyBuffer: a growable byte buffer for a small value copied into it over
// and over (a cursor's current value), placed so that the copy never
// straddles a page.
//
// Why: a store that crosses a 4 KiB page boundary is split, and a split
// store is many times the cost of a plain one (more under nested paging).
// A heap string sits wherever malloc put it; a cursor that reuses one
// buffer for every value it returns pays the split on every step when that
// place happens to cross a page (measured: a 100-byte value buffer at
// offset 0xfd0 of its page cost ycsb-e 13%, and which run got it depended
// on the sizes of unrelated objects). Here the capacity is a power of two
// and the buffer is placed, line-aligned, wholly inside one page whenever
// the capacity is at most a page, so any value of at most 4 KiB lies
// within one page (copy_buffer.cpp, grow).
//
// Thread safety: none (one owner, like std::string).
// Errors: allocation failure throws std::bad_alloc, as std::string's does.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace mvkv {

class CopyBuffer {
  public:
    /// The page size the placement guarantee holds for.
    static constexpr size_t kPageBytes = 4096;

    CopyBuffer() = default;
    CopyBuffer(CopyBuffer&&) noexcept = default;
    CopyBuffer& operator=(CopyBuffer&&) noexcept = default;

    /// Replaces the contents with a copy of `bytes` (which must not point
    /// into this buffer), growing the capacity to the next power of two
    /// (at least 64) when it is too small. Never shrinks.
    void assign(std::string_view bytes) {
        // Inline: a cursor step's copy, where a call costs a few percent.
        if (bytes.size() > capacity_) [[unlikely]]
            grow(bytes.size());  // the old bytes are replaced: nothing to carry over
        if (!bytes.empty())
            std::memcpy(data_.get(), bytes.data(), bytes.size());
        size_ = bytes.size();
    }
    void clear() { size_ = 0; }

    std::string_view view() const { return {data_.get(), size_}; }
    size_t size() const { return size_; }
    /// Bytes allocated (0 until the first non-empty assign).
    size_t capacity() const { return capacity_; }
    /// Exchanges contents and allocations with `other`.
    void swap(CopyBuffer& other) noexcept;

  private:
    struct Free {
        void operator()(char* p) const;
    };
    void grow(size_t atLeast);

    std::unique_ptr<char, Free> data_;
    size_t size_ = 0;
    size_t capacity_ = 0;
};

}  // namespace mvkv
