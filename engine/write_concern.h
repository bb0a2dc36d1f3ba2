// Write and read concerns (docs/replication.md): how many members of a
// replica set must have applied a commit before it is acknowledged, and which
// commits a transaction reads. A standalone engine is a set of one: {w: 1}
// and {w: "majority"} are satisfied by the engine itself (majority waits for
// its own durable point); {w: N > 1} is refused before anything commits.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "mvcc/timestamp.h"
#include "util/status.h"

namespace mvkv::engine {

struct WriteConcern {
    /// {w: N}: N members (the primary counts as one) applied the commit.
    /// Ignored when `majority`.
    int w = 1;
    /// {w: "majority"}: the commit is at or below the majority commit point.
    bool majority = false;
    /// How long to wait for the members; nullopt waits as long as it takes
    /// (MongoDB's wtimeout 0). On expiry: WriteConcernTimeout, the write
    /// committed all the same.
    std::optional<std::chrono::milliseconds> wtimeout;

    static WriteConcern nodes(int n, std::optional<std::chrono::milliseconds> timeout = {}) {
        return WriteConcern{n, false, timeout};
    }
    static WriteConcern majorityOf(std::optional<std::chrono::milliseconds> timeout = {}) {
        return WriteConcern{1, true, timeout};
    }
    /// {w: 1} / {w: 3} / {w: "majority", wtimeout: 50}, for messages.
    std::string describe() const;
};

/// MongoDB's readConcern levels: local reads the newest commits; snapshot a
/// fixed timestamp (TxnOptions::readTs, or the newest commit when begun);
/// majority the majority commit point (Engine::majorityCommitTs), so a
/// commit acknowledged with {w: 1} stays unseen until a majority has it.
enum class ReadConcern : uint8_t { kLocal, kSnapshot, kMajority };

/// "local" / "snapshot" / "majority".
const char* readConcernName(ReadConcern rc);

/// What a primary's replica set does for its engine (MongoDB's
/// ReplicationCoordinator): checks and waits for write concerns, reports
/// serverStatus' repl section. Engine::setReplicationCoordinator installs it.
/// Thread safety: every method from any thread.
class ReplicationCoordinator {
  public:
    virtual ~ReplicationCoordinator() = default;
    /// Before the commit: InvalidArgument when `wc` can never be met (more
    /// members than the set has, w < 1).
    virtual Status checkSatisfiable(const WriteConcern& wc) const = 0;
    /// After the commit at `ts`: OK once `wc` is met; WriteConcernTimeout
    /// after its wtimeout; IllegalOperation when the set stops meanwhile.
    /// Both errors say the write is committed.
    virtual Status awaitReplication(mvcc::Timestamp ts, const WriteConcern& wc) = 0;
    /// serverStatus' repl section, a JSON object.
    virtual std::string statusJson() const = 0;
};

}  // namespace mvkv::engine
