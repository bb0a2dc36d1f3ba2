#include "util/copy_buffer.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>

namespace mvkv {

void CopyBuffer::Free::operator()(char* p) const { std::free(p); }

void CopyBuffer::grow(size_t atLeast) {
    const size_t capacity = std::bit_ceil(std::max<size_t>(atLeast, 64));
    // aligned_alloc wants the size to be a multiple of the alignment: a
    // power of two at least as large as it is.
    const size_t alignment = std::min(capacity, kPageBytes);
    char* p = static_cast<char*>(std::aligned_alloc(alignment, capacity));
    if (p == nullptr)
        throw std::bad_alloc();
    data_.reset(p);
    capacity_ = capacity;
}

void CopyBuffer::assign(std::string_view bytes) {
    if (bytes.size() > capacity_)
        grow(bytes.size());  // the old bytes are replaced: nothing to carry over
    if (!bytes.empty())
        std::memcpy(data_.get(), bytes.data(), bytes.size());
    size_ = bytes.size();
}

void CopyBuffer::swap(CopyBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
}

}  // namespace mvkv
