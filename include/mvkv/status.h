// mvkv/status.h: Status, the error value every public mvkv call returns.
// Part of the public API (include/mvkv/); no stable ABI is promised yet.
//
// Contract:
// - An OK status carries no message: it is a code and a null pointer, so
//   making, moving and destroying one costs next to nothing on hot paths.
// - A non-OK status carries a code (what kind of failure, for programs) and a
//   message (what happened and what to do, for people).
// - No exception crosses the public API: failures are Status values.
// - Thread safety: a Status is a plain value; copies are independent.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace mvkv {

enum class StatusCode : uint8_t {
    kOk = 0,
    kNotFound,
    kInvalidArgument,
    kWriteConflict,
    kLockTimeout,
    kDeadlock,
    kInterrupted,
    kCorruption,
    kIOError,
    kIllegalOperation,
    kCappedPositionLost,
    kBusy,
    kInternal,
    kDuplicateKey,
    kNamespaceNotFound,
    kNamespaceExists,
    kQueryPlanKilled,  // a yielding operation's collection was dropped meanwhile
    kDocumentLocked,   // a document lock is held by another owner (docs/document-locks.md)
    kNotLockOwner,     // a document lock release/refresh by someone who does not hold it
    kLockLost,         // a fenced write whose document lock no longer holds
    kPrepareConflict,  // a read would see a prepared, unresolved update (docs/mvcc.md)
    kWriteConcernTimeout,      // committed, but not on enough members in time (docs/replication.md)
    kChangeStreamHistoryLost,  // a change stream's resume point is no longer in the oplog
    kNotWritablePrimary,       // a client write to a replica's secondary (docs/replication.md)
};

/// The code's name as shown to people and in JSON ("WriteConflict", ...).
std::string_view statusCodeName(StatusCode code);

class [[nodiscard]] Status {
  public:
    Status() = default;
    Status(StatusCode code, std::string message)
        : code_(code),
          message_(code == StatusCode::kOk ? nullptr
                                           : std::make_unique<std::string>(std::move(message))) {}
    Status(const Status& other)
        : code_(other.code_),
          message_(other.message_ ? std::make_unique<std::string>(*other.message_) : nullptr) {}
    Status& operator=(const Status& other) {
        if (this != &other)
            *this = Status(other);
        return *this;
    }
    Status(Status&&) noexcept = default;
    Status& operator=(Status&&) noexcept = default;

    static Status OK() { return Status(); }
    static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
    static Status InvalidArgument(std::string m) {
        return {StatusCode::kInvalidArgument, std::move(m)};
    }
    static Status WriteConflict(std::string m) {
        return {StatusCode::kWriteConflict, std::move(m)};
    }
    static Status LockTimeout(std::string m) { return {StatusCode::kLockTimeout, std::move(m)}; }
    static Status Deadlock(std::string m) { return {StatusCode::kDeadlock, std::move(m)}; }
    static Status Interrupted(std::string m) { return {StatusCode::kInterrupted, std::move(m)}; }
    static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
    static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
    static Status IllegalOperation(std::string m) {
        return {StatusCode::kIllegalOperation, std::move(m)};
    }
    static Status Busy(std::string m) { return {StatusCode::kBusy, std::move(m)}; }
    static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
    static Status DuplicateKey(std::string m) { return {StatusCode::kDuplicateKey, std::move(m)}; }
    static Status NamespaceNotFound(std::string m) {
        return {StatusCode::kNamespaceNotFound, std::move(m)};
    }
    static Status QueryPlanKilled(std::string m) {
        return {StatusCode::kQueryPlanKilled, std::move(m)};
    }
    static Status DocumentLocked(std::string m) {
        return {StatusCode::kDocumentLocked, std::move(m)};
    }
    static Status NotLockOwner(std::string m) { return {StatusCode::kNotLockOwner, std::move(m)}; }
    static Status LockLost(std::string m) { return {StatusCode::kLockLost, std::move(m)}; }
    static Status PrepareConflict(std::string m) {
        return {StatusCode::kPrepareConflict, std::move(m)};
    }
    static Status WriteConcernTimeout(std::string m) {
        return {StatusCode::kWriteConcernTimeout, std::move(m)};
    }
    static Status ChangeStreamHistoryLost(std::string m) {
        return {StatusCode::kChangeStreamHistoryLost, std::move(m)};
    }
    static Status NotWritablePrimary(std::string m) {
        return {StatusCode::kNotWritablePrimary, std::move(m)};
    }
    static Status NamespaceExists(std::string m) {
        return {StatusCode::kNamespaceExists, std::move(m)};
    }

    bool ok() const { return code_ == StatusCode::kOk; }
    StatusCode code() const { return code_; }
    /// Empty for OK.
    const std::string& message() const { return message_ ? *message_ : emptyMessage(); }

    /// "OK" or "<CodeName>: <message>".
    std::string toString() const;

    /// Marks a status as deliberately ignored.
    void ignore() const {}

  private:
    static const std::string& emptyMessage();

    StatusCode code_ = StatusCode::kOk;
    std::unique_ptr<std::string> message_;  // null when OK
};

/// A value or the Status saying why there is none.
template <typename T>
class [[nodiscard]] StatusWith {
  public:
    StatusWith(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
    StatusWith(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

    bool ok() const { return status_.ok(); }
    const Status& status() const { return status_; }
    /// Only valid when ok().
    const T& value() const& { return value_; }
    T& value() & { return value_; }
    T&& value() && { return std::move(value_); }

  private:
    Status status_;
    T value_{};
};

}  // namespace mvkv
