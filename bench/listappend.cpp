// List-append transactions on mvkv (listappend.h).
#include "listappend.h"

#include <charconv>

namespace mvkv::bench {

std::string encodeList(const std::vector<int64_t>& list) {
    std::string out;
    for (int64_t v : list) {
        if (!out.empty())
            out += ',';
        out += std::to_string(v);
    }
    return out;
}

Status decodeList(std::string_view text, std::vector<int64_t>* list) {
    list->clear();
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find(',', pos);
        if (end == std::string_view::npos)
            end = text.size();
        int64_t v = 0;
        auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + end, v);
        if (ec != std::errc() || ptr != text.data() + end)
            return Status::Corruption("a list-append value is not integers separated by commas: \"" +
                                      std::string(text) + "\"");
        list->push_back(v);
        pos = end + 1;
    }
    return Status::OK();
}

std::string listKey(int64_t key) { return "k" + std::to_string(key); }

namespace {

Status readList(Session& session, std::string_view ns, int64_t key,
                std::vector<int64_t>* list) {
    std::string value;
    Status s = session.get(ns, listKey(key), &value);
    if (s.code() == StatusCode::kNotFound) {
        list->clear();
        return Status::OK();
    }
    if (!s.ok())
        return s;
    return decodeList(value, list);
}

Status runOps(Session& session, std::string_view ns, std::vector<check::MicroOp>& ops,
              Session* readSession) {
    std::vector<int64_t> list;
    for (check::MicroOp& op : ops) {
        if (op.kind == check::MicroOp::Kind::kRead) {
            if (Status s = readList(readSession ? *readSession : session, ns, op.key, &list);
                !s.ok())
                return s;
            op.list = list;
            continue;
        }
        if (Status s = readList(session, ns, op.key, &list); !s.ok())
            return s;
        list.push_back(*op.value);
        if (Status s = session.put(ns, listKey(op.key), encodeList(list)); !s.ok())
            return s;
    }
    return session.commit().status();
}

}  // namespace

Status runListAppendTxn(Session& session, std::string_view ns,
                        check::HistoryRecorder& recorder, int64_t process,
                        std::vector<check::MicroOp> ops, const TxnOptions& options,
                        Session* readSession) {
    recorder.invoke(process, ops);
    if (Status s = session.begin(options); !s.ok()) {
        recorder.fail(process, ops);  // nothing ran
        return s;
    }
    Status s = runOps(session, ns, ops, readSession);
    if (s.ok()) {
        recorder.ok(process, ops);
        return s;
    }
    if (session.inTransaction())
        session.abort().ignore();
    if (s.code() == StatusCode::kWriteConflict) {
        recorder.fail(process, ops);
        return s;
    }
    recorder.info(process, ops);
    return s;
}

}  // namespace mvkv::bench
