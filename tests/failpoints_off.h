// Failpoints are process-wide: a test that arms any declares an AllOff,
// which turns every failpoint off when the test ends, passed or failed.
#pragma once

#include "mvkv/failpoint.h"

namespace mvkv::testing {

struct AllOff {
    ~AllOff() {
        for (const FailPointInfo& f : listFailPoints())
            configureFailPoint(f.name, FailPointMode{}).status().ignore();
    }
};

}  // namespace mvkv::testing
