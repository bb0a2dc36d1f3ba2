#include "util/status.h"

namespace mvkv {

std::string_view statusCodeName(StatusCode code) {
    switch (code) {
        case StatusCode::kOk:
            return "OK";
        case StatusCode::kNotFound:
            return "NotFound";
        case StatusCode::kInvalidArgument:
            return "InvalidArgument";
        case StatusCode::kWriteConflict:
            return "WriteConflict";
        case StatusCode::kLockTimeout:
            return "LockTimeout";
        case StatusCode::kDeadlock:
            return "Deadlock";
        case StatusCode::kInterrupted:
            return "Interrupted";
        case StatusCode::kCorruption:
            return "Corruption";
        case StatusCode::kIOError:
            return "IOError";
        case StatusCode::kIllegalOperation:
            return "IllegalOperation";
        case StatusCode::kCappedPositionLost:
            return "CappedPositionLost";
        case StatusCode::kBusy:
            return "Busy";
        case StatusCode::kInternal:
            return "Internal";
        case StatusCode::kDuplicateKey:
            return "DuplicateKey";
        case StatusCode::kNamespaceNotFound:
            return "NamespaceNotFound";
        case StatusCode::kNamespaceExists:
            return "NamespaceExists";
        case StatusCode::kQueryPlanKilled:
            return "QueryPlanKilled";
        case StatusCode::kDocumentLocked:
            return "DocumentLocked";
        case StatusCode::kNotLockOwner:
            return "NotLockOwner";
        case StatusCode::kLockLost:
            return "LockLost";
        case StatusCode::kPrepareConflict:
            return "PrepareConflict";
        case StatusCode::kWriteConcernTimeout:
            return "WriteConcernTimeout";
        case StatusCode::kChangeStreamHistoryLost:
            return "ChangeStreamHistoryLost";
        case StatusCode::kNotWritablePrimary:
            return "NotWritablePrimary";
    }
    return "Unknown";
}

const std::string& Status::emptyMessage() {
    static const std::string empty;
    return empty;
}

std::string Status::toString() const {
    if (ok())
        return "OK";
    std::string out(statusCodeName(code_));
    out += ": ";
    out += message();
    return out;
}

}  // namespace mvkv
