// doctest checks for Status values: on failure they print the whole status
// (code name and message), not just "false".
#pragma once

#include <doctest/doctest.h>

#include "util/status.h"

#define CHECK_OK(expr)                                                 \
    do {                                                               \
        const ::mvkv::Status checkOkStatus_ = (expr);                  \
        CHECK_MESSAGE(checkOkStatus_.ok(), checkOkStatus_.toString()); \
    } while (false)
#define CHECK_CODE(expr, expected)                                                         \
    do {                                                                                   \
        const ::mvkv::Status checkCodeStatus_ = (expr);                                    \
        CHECK_MESSAGE(checkCodeStatus_.code() == (expected), checkCodeStatus_.toString()); \
    } while (false)
#define REQUIRE_OK(expr)                                                     \
    do {                                                                     \
        const ::mvkv::Status requireOkStatus_ = (expr);                      \
        REQUIRE_MESSAGE(requireOkStatus_.ok(), requireOkStatus_.toString()); \
    } while (false)

namespace mvkv::testing {

/// REQUIRE_OK as an expression, for `for (mustOk(c.first()); ...; mustOk(c.next()))`.
inline void mustOk(const Status& s) {
    REQUIRE_MESSAGE(s.ok(), s.toString());
}

}  // namespace mvkv::testing
