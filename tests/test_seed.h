// The seed of a randomized test: MVKV_TEST_SEED when it is set (to replay a
// failure), else a fresh one. Printed either way (doctest MESSAGE, in the
// test's log), so any run can be repeated.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <random>

namespace mvkv::testing {

inline uint32_t testSeed() {
    uint32_t seed;
    const char* env = std::getenv("MVKV_TEST_SEED");
    if (env != nullptr && *env != '\0')
        seed = static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
    else
        seed = std::random_device{}();
    MESSAGE("seed " << seed << " (replay with MVKV_TEST_SEED=" << seed << ")");
    return seed;
}

}  // namespace mvkv::testing
