// FailPoint's slow paths: deciding whether an armed failpoint fires.
#include "failpoint/failpoint.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <random>
#include <thread>

#include "failpoint/failpoints.h"
#include "failpoint/registry.h"

namespace mvkv::failpoint {

namespace {

bool drawActivation(double probability) {
    thread_local std::minstd_rand rng{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < probability;
}

}  // namespace

FailPoint::FailPoint(std::string_view name, std::string_view description)
    : name_(name), description_(description) {
    registry().emplace(name_, this);
}

FailPointInfo FailPoint::info() const {
    std::lock_guard lock(mutex_);
    return {name_, description_, mode_, data_, timesEntered_};
}

uint64_t FailPoint::configure(const FailPointMode& mode, const FailPointData& data) {
    std::lock_guard lock(mutex_);
    mode_ = mode;
    data_ = data;
    remaining_ = mode.n;
    ++generation_;
    armed_.store(mode.kind != FailPointModeKind::kOff, std::memory_order_relaxed);
    changed_.notify_all();  // a hang ends when its failpoint is reconfigured
    return timesEntered_;
}

std::optional<FailPointData> FailPoint::checkSlow(const std::string_view* key,
                                                  uint64_t* generation) {
    std::lock_guard lock(mutex_);
    if (key && !data_.key.empty() && data_.key != *key)
        return std::nullopt;
    bool fires = false;
    switch (mode_.kind) {
        case FailPointModeKind::kOff:
            break;
        case FailPointModeKind::kAlwaysOn:
            fires = true;
            break;
        case FailPointModeKind::kTimes:
            fires = remaining_ > 0;
            if (fires && --remaining_ == 0) {
                mode_ = {};
                armed_.store(false, std::memory_order_relaxed);
            }
            break;
        case FailPointModeKind::kSkip:
            if (remaining_ > 0)
                --remaining_;
            else
                fires = true;
            break;
        case FailPointModeKind::kActivationProbability:
            fires = drawActivation(mode_.probability);
            break;
    }
    if (!fires)
        return std::nullopt;
    if (generation)
        *generation = generation_;
    ++timesEntered_;
    changed_.notify_all();
    return data_;
}

void FailPoint::pauseSlow() {
    uint64_t generation = 0;
    auto fired = checkSlow(nullptr, &generation);
    if (!fired)
        return;
    if (fired->delayMs > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(fired->delayMs));
        return;
    }
    // Hang until someone configures the failpoint again (off, or anew),
    // counting from the configuration it fired under: one made between the
    // firing and this wait ends it at once.
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return generation_ != generation; });
}

Status FailPoint::waitForTimesEntered(uint64_t timesEntered, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (changed_.wait_for(lock, timeout, [&] { return timesEntered_ >= timesEntered; }))
        return Status::OK();
    return Status::Busy(fmt::format("failpoint {} fired {} times, not {}, within {} ms", name_,
                                    timesEntered_, timesEntered, timeout.count()));
}

void crashPoint(std::string_view point) {
    if (abortProcess.checkKey(point))
        ::kill(::getpid(), SIGKILL);
}

}  // namespace mvkv::failpoint
