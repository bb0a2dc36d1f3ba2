// Helpers shared by the mvcc test suites.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "mvcc/update.h"
#include "tests/status_check.h"

namespace mvkv::mvcc::testing {

/// A stand-in for a collection: one update chain per key, owned by the test.
/// Create every key a test's threads use before the threads start.
class Collection {
  public:
    UpdateChain& create(const std::string& key) {
        auto& chain = chains_[key];
        if (!chain)
            chain = std::make_unique<UpdateChain>();
        return *chain;
    }
    UpdateChain& operator[](const std::string& key) { return create(key); }
    /// Lookup only: safe while other threads use the map.
    UpdateChain& at(const std::string& key) const { return *chains_.at(key); }

  private:
    std::map<std::string, std::unique_ptr<UpdateChain>> chains_;
};

}  // namespace mvkv::mvcc::testing
