// Every failpoint of the engine, in one place (docs/failpoints.md says
// what each does; failpoints.cpp gives each its name and description).
#pragma once

#include "failpoint/failpoint.h"

namespace mvkv::failpoint {

// Transactions
extern FailPoint writeConflictOnKey;     // a write to data.key gets WriteConflict
extern FailPoint hangBeforeCommit;       // Session::commit, before anything
extern FailPoint hangAfterOplogAppend;   // commit logged, not yet visible
extern FailPoint readIgnoresSnapshot;    // test-only: a transaction's get reads the newest commits
// Locks
extern FailPoint hangInLockAcquisition;  // every lock request, before it is granted
// The oplog's I/O
extern FailPoint failOplogWrite;         // write(2) of a batch fails with EIO
extern FailPoint failOplogFsync;         // fdatasync of a segment fails with EIO
// Every file operation (util/file_sync.h): key=SITE.OP, error=eio|enospc|short
extern FailPoint failIO;
// Checkpoints
extern FailPoint failCheckpointWrite;          // a checkpoint file write fails with EIO
extern FailPoint hangBeforeCheckpointRename;   // written and synced, not yet renamed
// Replication
extern FailPoint hangInReplicaSetTeardown;  // ~ReplicaSet, between its two steps
// Background work
extern FailPoint pauseHistorySweep;      // the sweeper skips its passes while on
extern FailPoint pauseTtlMonitor;        // the TTL monitor skips its passes while on
// Crash tests
extern FailPoint abortProcess;           // crashPoint(data.key) kills the process

}  // namespace mvkv::failpoint
