// The definitions of every failpoint (failpoints.h) and their registry.
#include "failpoint/failpoints.h"

#include <cerrno>
#include <string>

#include "failpoint/registry.h"
#include "util/file_sync.h"

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
FailPoint failIO(
    "failIO",
    "the file operation data.key = SITE.OP (every one when empty) fails: error=eio (default), "
    "enospc, or short (half written, then ENOSPC); sites oplogAppend, segmentSwitch, capping, "
    "checkpoint, marker, ...; ops write, fsync, rename, dirsync, remove (docs/failpoints.md)");
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

namespace {

std::optional<IoFault> probeFailIO(std::string_view site, std::string_view op) {
    if (!failIO.armed()) [[likely]]
        return std::nullopt;
    std::string point;
    point.reserve(site.size() + 1 + op.size());
    point.append(site).append(".").append(op);
    auto fired = failIO.checkKey(point);
    if (!fired)
        return std::nullopt;
    IoFault fault;
    fault.err = fired->error == "enospc" || fired->error == "short" ? ENOSPC : EIO;
    fault.shortWrite = fired->error == "short";
    return fault;
}

// util/ sits below this library: the probe is handed down at start-up,
// and taken back at exit before failIO (defined above, so destroyed after)
// is gone: a file closed during static destruction finds no probe.
struct ProbeInstaller {
    ProbeInstaller() { installIoFaultProbe(&probeFailIO); }
    ~ProbeInstaller() { installIoFaultProbe(nullptr); }
} probeInstaller;

}  // namespace

}  // namespace mvkv::failpoint
