// The dependency graph over transactions (Adya's ww / wr / rw edges) and
// its cycles (docs/checker.md, "Cycles"): strongly connected components by
// Tarjan's algorithm, then at most one representative cycle per component
// and per anomaly type, found by breadth-first search restricted to the
// component, so a large history never enumerates cycles.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace mvkv::check {

enum EdgeType : uint8_t { kWW = 1, kWR = 2, kRW = 4 };

/// Why an edge exists, for the explanation.
struct EdgeReason {
    std::string key;
    std::string fromValue;  // ww: from's value; wr: the value read; rw: the version read ("" none)
    std::string toValue;    // ww: to's value; rw: to's next version
};

struct CycleEdge {
    uint32_t from;
    uint32_t to;
    EdgeType type;
};

class DependencyGraph {
  public:
    explicit DependencyGraph(size_t nodes) : out_(nodes) {}

    /// Adds from -> to of `type` (self edges are ignored; the first reason is kept).
    void addEdge(uint32_t from, uint32_t to, EdgeType type, EdgeReason reason);
    const EdgeReason& reason(const CycleEdge& edge) const;

    /// Strongly connected components of two or more nodes.
    std::vector<std::vector<uint32_t>> components() const;

    /// Representative cycles of one component: at most one whose edges are
    /// all ww, one of ww and wr with at least one wr, one with exactly one
    /// rw and, when there is none of that, one with two or more rw, no two
    /// of them adjacent, or, when there is none of that either, one with
    /// two or more rw.
    std::vector<std::vector<CycleEdge>> cyclesOf(const std::vector<uint32_t>& component) const;

  private:
    struct Out {
        uint32_t to;
        uint8_t types;
    };
    static uint64_t reasonKey(uint32_t from, uint32_t to, EdgeType type) {
        return (uint64_t(from) << 34) | (uint64_t(to) << 3) | type;
    }

    std::vector<std::vector<Out>> out_;
    std::unordered_map<uint64_t, EdgeReason> reasons_;
};

}  // namespace mvkv::check
