#include "util/file_sync.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mvkv {

Status ioError(std::string_view what, const std::string& path) {
    return Status::IOError(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

Status syncDirectory(const std::string& dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return ioError("open directory", dir);
    int rc = ::fsync(fd);
    Status s = rc == 0 ? Status::OK() : ioError("fsync directory", dir);
    ::close(fd);
    return s;
}

}  // namespace mvkv
