// mvkv::ReplicaSet over replication::ReplicaSet (include/mvkv/replica_set.h).
#include "api/impl.h"

namespace mvkv {

ReplicaSet::ReplicaSet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReplicaSet::~ReplicaSet() = default;

StatusWith<int> ReplicaSet::addSecondary() {
    return impl_->set->addSecondary();
}
StatusWith<int> ReplicaSet::addSecondary(const std::string& path) {
    return impl_->set->addSecondary(path);
}
Status ReplicaSet::pause(int id) {
    return impl_->set->pause(id);
}
Status ReplicaSet::resume(int id) {
    return impl_->set->resume(id);
}

std::vector<MemberStatus> ReplicaSet::status() const {
    std::vector<MemberStatus> out;
    for (replication::MemberStatus& m : impl_->set->status())
        out.push_back({m.id, std::move(m.state), m.lastApplied, m.lastDurable, m.paused,
                       std::move(m.error)});
    return out;
}
std::string ReplicaSet::statusJson() const {
    return impl_->set->statusJson();
}
size_t ReplicaSet::size() const {
    return impl_->set->size();
}
Timestamp ReplicaSet::majorityCommitTs() const {
    return impl_->set->majorityCommitTs();
}

}  // namespace mvkv
