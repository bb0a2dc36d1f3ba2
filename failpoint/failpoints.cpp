// The definitions of every failpoint (failpoints.h) and their registry.
#include "failpoint/failpoints.h"

#include "failpoint/registry.h"

namespace mvkv::failpoint {

std::map<std::string, FailPoint*, std::less<>>& registry() {
    static std::map<std::string, FailPoint*, std::less<>> byName;
    return byName;
}

FailPoint writeConflictOnKey(
    "writeConflictOnKey",
    "a transaction's write of data.key (every key when empty) fails with WriteConflict");
FailPoint hangBeforeCommit("hangBeforeCommit",
                           "Session::commit hangs (or sleeps delay_ms) before it does anything");
FailPoint hangAfterOplogAppend(
    "hangAfterOplogAppend",
    "a commit hangs (or sleeps delay_ms) after its oplog record is appended, before it is "
    "visible");
FailPoint readIgnoresSnapshot(
    "readIgnoresSnapshot",
    "test-only, breaks isolation on purpose: a transaction's get of data.key (every key when "
    "empty) reads the newest commits instead of its snapshot (the isolation checker must catch it)");
FailPoint hangInLockAcquisition(
    "hangInLockAcquisition",
    "every lock request hangs (or sleeps delay_ms) before the lock manager sees it");
FailPoint failOplogWrite("failOplogWrite",
                         "the oplog's write(2) of a batch fails with EIO: the engine stops "
                         "taking writes");
FailPoint failOplogFsync("failOplogFsync",
                         "the oplog's fdatasync of a segment fails with EIO: the engine stops "
                         "taking writes, never retrying the sync");
FailPoint failCheckpointWrite("failCheckpointWrite",
                              "a checkpoint file's write fails with EIO: the checkpoint fails, "
                              "its temp file is removed");
FailPoint hangBeforeCheckpointRename(
    "hangBeforeCheckpointRename",
    "a checkpoint hangs (or sleeps delay_ms) after its file is written and synced, before the "
    "rename that publishes it");
FailPoint hangInReplicaSetTeardown(
    "hangInReplicaSetTeardown",
    "a replica set's teardown hangs (or sleeps delay_ms) after its waiters were released, "
    "before the engine is standalone again");
FailPoint pauseHistorySweep("pauseHistorySweep",
                            "the background history sweep skips its passes while on");
FailPoint pauseTtlMonitor("pauseTtlMonitor", "the TTL monitor skips its passes while on");
FailPoint abortProcess(
    "abortProcess",
    "the process dies by SIGKILL at crash point data.key (every point when empty): "
    "beforeCommit, afterOplogAppend, afterOplogWrite, beforeCheckpointRename, "
    "afterCheckpointRename");

}  // namespace mvkv::failpoint
