// Scan checks shared by the BTree tests: numbered keys whose order is their
// number's, some of them "stable" (in the tree before a scan starts and never
// removed), and the rule a forward scan must keep while others write: keys
// strictly increasing, and no stable key skipped.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace mvkv::testing {

// Key of number i: ten digits, and for every third number a tail that makes
// it longer than a slot holds inline (a key blob), so both paths are scanned.
inline std::string numberedKey(int i) {
    char buf[48];
    snprintf(buf, sizeof(buf), i % 3 == 0 ? "%010d:a-longer-key-with-a-blob" : "%010d", i);
    return buf;
}
inline int keyNumber(std::string_view key) {
    return std::atoi(std::string(key.substr(0, 10)).c_str());
}
inline bool isStable(int i) {
    return i % 5 == 0;
}

// One forward scan, step by step: feed it every key the cursor returns, then
// finish(); ok() is false once a rule broke, and what() says which.
class ForwardScanCheck {
  public:
    explicit ForwardScanCheck(int keyCount) : keyCount_(keyCount) {}
    void step(std::string_view key) {
        const int n = keyNumber(key);
        if (n <= last_)
            fail("key " + std::to_string(n) + " after " + std::to_string(last_));
        else
            checkNoStableBetween(last_, n);
        last_ = n;
    }
    void finish() { checkNoStableBetween(last_, keyCount_); }
    bool ok() const { return error_.empty(); }
    const std::string& what() const { return error_; }

  private:
    // Stable keys lie strictly between a and b: one was skipped.
    void checkNoStableBetween(int a, int b) {
        for (int i = a + 1; i < b; ++i)
            if (isStable(i)) {
                fail("stable key " + std::to_string(i) + " skipped between " + std::to_string(a) +
                     " and " + std::to_string(b));
                return;
            }
    }
    void fail(std::string message) {
        if (error_.empty())
            error_ = std::move(message);
    }
    int keyCount_;
    int last_ = -1;
    std::string error_;
};

}  // namespace mvkv::testing
