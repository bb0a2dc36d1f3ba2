#include "mvcc/write_conflict_retry.h"

#include <fmt/format.h>

#include <thread>

namespace mvkv::mvcc {

std::chrono::milliseconds writeConflictBackoff(uint64_t conflicts) {
    using std::chrono::milliseconds;
    if (conflicts <= 3)
        return milliseconds(0);
    if (conflicts < 10)
        return milliseconds(1);
    if (conflicts < 100)
        return milliseconds(5);
    if (conflicts < 200)
        return milliseconds(10);
    return milliseconds(100);
}

void backoffAfterConflict(uint64_t conflicts, const Deadline& deadline) {
    auto pause = writeConflictBackoff(conflicts);
    if (pause.count() == 0) {
        std::this_thread::yield();  // let the other writer finish
        return;
    }
    auto until = Deadline::Clock::now() + pause;
    if (!deadline.isNever() && deadline.when() < until)
        until = deadline.when();
    std::this_thread::sleep_until(until);
}

Status retriesExhausted(uint64_t attempts, const Status& lastConflict) {
    return Status::WriteConflict(fmt::format(
        "gave up after {} attempts when the operation's deadline passed; last conflict: {}",
        attempts, lastConflict.message()));
}

}  // namespace mvkv::mvcc
