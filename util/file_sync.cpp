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

Status writeFileAtomically(const std::string& dir, const std::string& name, std::string_view text) {
    const std::string path = dir + "/" + name;
    const std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ioError("create", tmp);
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            Status s = ioError("write", tmp);
            ::close(fd);
            return s;
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
        Status s = ioError("fsync", tmp);
        ::close(fd);
        return s;
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0)
        return ioError("rename to", path);
    return syncDirectory(dir);
}

Status removeFileDurably(const std::string& dir, const std::string& name) {
    const std::string path = dir + "/" + name;
    if (::unlink(path.c_str()) != 0) {
        if (errno == ENOENT)
            return Status::OK();
        return ioError("remove", path);
    }
    return syncDirectory(dir);
}

}  // namespace mvkv
