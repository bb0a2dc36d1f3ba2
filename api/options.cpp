// The public option types' text (include/mvkv/options.h), as the engine's.
#include "api/convert.h"

namespace mvkv {

std::string describeWriteConcern(const WriteConcern& wc) {
    return api::toEngine(wc).describe();
}

std::string_view readConcernName(ReadConcern rc) {
    return engine::readConcernName(api::toEngine(rc));
}

}  // namespace mvkv
