// mvkv/options.h: how an engine is opened and how a transaction runs.
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mvkv/timestamp.h"

namespace mvkv {

/// When a commit's oplog record reaches the disk (WiredTiger's
/// transaction_sync): kNone leaves it to a buffer and the OS (a crash may
/// lose the newest commits, never corrupt), kWrite hands it to the OS before
/// commit returns (survives a process crash), kFsync fdatasyncs it first
/// (survives a power loss; group commit shares syncs between threads).
enum class SyncMode : uint8_t { kNone, kWrite, kFsync };

struct EngineOptions {
    /// The data directory (created if missing; one engine per directory,
    /// locked). Empty: an in-memory engine (nothing survives close).
    std::string path;
    SyncMode syncMode = SyncMode::kFsync;
    /// Open a directory whose oplog is damaged by cutting the damage away
    /// (what is lost is listed on stderr and in serverStatus "recovery").
    /// Without it such a directory is refused (Corruption).
    bool repair = false;
    /// Oplog size on disk before capping removes whole old segments.
    uint64_t oplogCapBytes = 1ull << 30;
    /// An in-memory engine's oplog (for replicas and change streams); 0: none.
    /// With one, commits go in timestamp order, as on a durable engine (a
    /// commit at or below the newest finished one is InvalidArgument unless
    /// held before it); 0 gives WiredTiger's freer timestamp rules.
    uint64_t inMemoryOplogCapBytes = 64ull << 20;
    /// Background checkpoints (0: only explicit Engine::checkpoint()).
    std::chrono::milliseconds checkpointInterval{60000};
    size_t maxKeyBytes = 4 * 1024;
    size_t maxValueBytes = 16 * 1024 * 1024;
    /// How long an implicit write retries its write conflicts before it
    /// returns WriteConflict.
    std::chrono::milliseconds writeConflictRetryTimeout{5000};
    /// How long a lock request waits (LockTimeout after); none: forever.
    std::optional<std::chrono::milliseconds> lockTimeout;
    /// Background history sweep period (0: off; Engine::sweepHistory still works).
    std::chrono::milliseconds historySweepInterval{1000};
    /// Operations slower than this are logged (serverStatus "log").
    std::chrono::milliseconds slowOpThreshold{100};
};

/// MongoDB's readConcern: local reads the newest commits; snapshot a fixed
/// timestamp (TxnOptions::readTs, or the newest commit when begun);
/// majority the majority commit point (Engine::majorityCommitTs), so a
/// commit acknowledged with {w: 1} stays unseen until a majority has it.
enum class ReadConcern : uint8_t { kLocal, kSnapshot, kMajority };

struct TxnOptions {
    /// Read as of this timestamp (WiredTiger's read_timestamp); none: the
    /// newest commits (Session::readTimestamp() says which point that is).
    Timestamp readTs = kNoTimestamp;
    /// A readTs below oldest reads at oldest instead of being refused.
    bool roundUpReadTs = false;
    ReadConcern readConcern = ReadConcern::kLocal;
    /// Reads skip prepared writes instead of returning PrepareConflict; such
    /// a transaction may not write.
    bool ignorePrepare = false;
};

/// MongoDB's write concern, for a commit on a replica set's primary:
/// {w: N} waits until N members (the primary counts) applied the commit,
/// {w: "majority"} until the majority commit point reaches it. On timeout:
/// WriteConcernTimeout, the write committed all the same.
struct WriteConcern {
    int w = 1;
    bool majority = false;
    std::optional<std::chrono::milliseconds> wtimeout;  // none: wait as long as it takes
};

/// "{w: 2}", "{w: \"majority\", wtimeout: 500}": as messages and the shell show it.
std::string describeWriteConcern(const WriteConcern& wc);
/// "local", "snapshot" or "majority".
std::string_view readConcernName(ReadConcern rc);

/// The longest TTL (MongoDB's expireAfterSeconds bound, 2^31 - 1 seconds).
inline constexpr int64_t kMaxExpireAfterSeconds = (int64_t{1} << 31) - 1;

/// Session::createCollection's options (docs/ttl.md, docs/oplog.md).
struct CollectionOptions {
    /// A capped collection: the oldest entries go once the key + value bytes
    /// pass cappedSizeBytes (1 .. 2^50), or the entries pass cappedMaxDocs
    /// (0: no count cap, else 1 .. 2^31 - 1).
    bool capped = false;
    int64_t cappedSizeBytes = 0;
    int64_t cappedMaxDocs = 0;
    /// Set: a TTL collection whose entries expire this many seconds after
    /// their write (0 .. kMaxExpireAfterSeconds). Not with capped.
    std::optional<int64_t> expireAfterSeconds;
};

/// A fenced write (docs/document-locks.md): made only while the document
/// lock on its key is held by `owner` with fencing `token` (what
/// DocumentLocks::acquire returned); else LockLost and nothing is written.
/// `owner` is a view: it must stay valid for the call only.
struct WriteFence {
    std::string_view owner;
    uint64_t token = 0;
};

/// What a single write may carry besides its key and value.
struct WriteOptions {
    /// TTL collections only: the entry expires at this wall-clock time (ms
    /// since the Unix epoch, > 0) instead of its write time plus the
    /// collection's expireAfterSeconds.
    std::optional<int64_t> expireAtMs;
    std::optional<WriteFence> fence;
};

}  // namespace mvkv
