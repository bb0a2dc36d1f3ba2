// Asymmetric memory barriers: a cheap fence for the hot side, an expensive
// one for the rare side, together as strong as a full fence on both.
//
// A reader that publishes "I am here" and then reads shared data needs a
// StoreLoad fence between the two (on x86 the only reordering the hardware
// does: the store waits in the store buffer while the loads go ahead). When
// the other side of the handshake runs rarely (a reclaimer scanning the
// readers' flags), the fence can move there: the reader's light() only keeps
// the compiler from reordering, and the rare side's heavy() makes every
// thread of the process that is running execute a full barrier before it
// returns (Linux membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED, by IPI). A
// thread not running then is between a context switch, which is a full
// barrier too. So after heavy() returns, every store a thread made before
// its light() at the moment of the barrier is visible to the caller, and
// every load it makes after that sees what the caller stored before heavy().
// This is the scheme of liburcu's "memb" flavour and folly's
// asymmetricHeavyBarrier.
//
// Contract:
// - available(): whether heavy() works here (the kernel has the expedited
//   private command and the process registered for it; checked once, on the
//   first call, thread-safe). Callers fall back to full fences when not.
// - heavy(): requires available(); may be called from any thread; costs a
//   system call and one interrupt per CPU running this process (microseconds:
//   keep it off hot paths). A failure after a successful registration is a
//   kernel contract broken: fatal, as allocation failure is.
// - light(): a compiler fence only; free at run time.
#pragma once

#include <atomic>

namespace mvkv::process_barrier {

bool available();

void heavy();

inline void light() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

}  // namespace mvkv::process_barrier
