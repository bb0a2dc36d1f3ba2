#include "util/process_barrier.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mvkv::process_barrier {

namespace {

long membarrier(int cmd) {
    return syscall(__NR_membarrier, cmd, 0, 0);
}

bool registerOnce() {
    long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 ||
        (cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
        return false;  // an old kernel, or a sandbox that filters the call
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

}  // namespace

bool available() {
    static const bool registered = registerOnce();  // thread-safe initialisation
    return registered;
}

void heavy() {
    assert(available());
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
        std::fprintf(stderr, "mvkv: membarrier(PRIVATE_EXPEDITED) failed: %s\n",
                     std::strerror(errno));
        std::abort();
    }
}

}  // namespace mvkv::process_barrier
