// CopyBuffer: contents as assigned, growth, and its placement guarantee
// (a value of at most a page never straddles one).
#include "util/copy_buffer.h"

#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace {

using mvkv::CopyBuffer;

bool withinOnePage(const CopyBuffer& b) {
    const auto first = reinterpret_cast<uintptr_t>(b.view().data());
    const auto last = first + b.size() - 1;
    return first / CopyBuffer::kPageBytes == last / CopyBuffer::kPageBytes;
}

TEST_CASE("a copy buffer holds what was assigned last, empty until then") {
    CopyBuffer b;
    CHECK(b.view().empty());
    CHECK(b.capacity() == 0);
    b.assign("hello");
    CHECK(b.view() == "hello");
    CHECK(b.capacity() == 64);
    b.assign("");
    CHECK(b.view().empty());
    CHECK(b.capacity() == 64);  // never shrinks
    const std::string big(1000, 'x');
    b.assign(big);
    CHECK(b.view() == big);
    CHECK(b.capacity() == 1024);
    b.assign("short again");
    CHECK(b.view() == "short again");
    CHECK(b.capacity() == 1024);
    b.clear();
    CHECK(b.size() == 0);
}

TEST_CASE("a value of at most a page never straddles a page boundary") {
    // Many buffers alive at once, so that the allocator hands out places
    // all over its pages; each size from 1 byte to a page.
    std::vector<CopyBuffer> buffers;
    std::string bytes;
    for (size_t size = 1; size <= CopyBuffer::kPageBytes; size += (size < 256 ? 1 : 61)) {
        bytes.assign(size, static_cast<char>('a' + size % 26));
        CopyBuffer& b = buffers.emplace_back();
        b.assign(bytes);
        CHECK(b.view() == bytes);
        CHECK(withinOnePage(b));
        CHECK(b.capacity() >= size);
        CHECK((b.capacity() & (b.capacity() - 1)) == 0);  // a power of two
    }
}

TEST_CASE("swap and move exchange contents and allocations") {
    CopyBuffer a, b;
    a.assign("first");
    b.assign(std::string(300, 'y'));
    const char* aData = a.view().data();
    a.swap(b);
    CHECK(a.view() == std::string(300, 'y'));
    CHECK(b.view() == "first");
    CHECK(b.view().data() == aData);
    CopyBuffer c(std::move(b));
    CHECK(c.view() == "first");
    CHECK(c.view().data() == aData);
}

}  // namespace
