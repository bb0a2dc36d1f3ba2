// Tarjan's SCCs and the representative cycle searches (dependency_graph.h).
#include "check/dependency_graph.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace mvkv::check {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// A component's nodes renumbered 0..n-1, with the edges inside it.
struct Local {
    struct Out {
        uint32_t to;
        uint8_t types;
    };
    std::vector<uint32_t> global;
    std::vector<std::vector<Out>> out;
};

// Tarjan's algorithm, iterative (a long chain must not overflow the stack),
// over the edges whose type is in `mask`. Returns each node's component id.
template <typename Adjacency>
std::vector<uint32_t> tarjan(const Adjacency& out, uint8_t mask) {
    const size_t n = out.size();
    std::vector<uint32_t> index(n, kNone), low(n, 0), comp(n, kNone);
    std::vector<uint32_t> stack;
    std::vector<bool> onStack(n, false);
    struct Frame {
        uint32_t node;
        size_t next;
    };
    std::vector<Frame> frames;
    uint32_t counter = 0, comps = 0;
    for (uint32_t root = 0; root < n; ++root) {
        if (index[root] != kNone)
            continue;
        frames.push_back({root, 0});
        index[root] = low[root] = counter++;
        stack.push_back(root);
        onStack[root] = true;
        while (!frames.empty()) {
            Frame& f = frames.back();
            const uint32_t v = f.node;
            if (f.next < out[v].size()) {
                const auto& e = out[v][f.next++];
                if ((e.types & mask) == 0)
                    continue;
                const uint32_t w = e.to;
                if (index[w] == kNone) {
                    index[w] = low[w] = counter++;
                    stack.push_back(w);
                    onStack[w] = true;
                    frames.push_back({w, 0});
                } else if (onStack[w]) {
                    low[v] = std::min(low[v], index[w]);
                }
                continue;
            }
            if (low[v] == index[v]) {
                uint32_t w;
                do {
                    w = stack.back();
                    stack.pop_back();
                    onStack[w] = false;
                    comp[w] = comps;
                } while (w != v);
                ++comps;
            }
            frames.pop_back();
            if (!frames.empty()) {
                uint32_t parent = frames.back().node;
                low[parent] = std::min(low[parent], low[v]);
            }
        }
    }
    return comp;
}

EdgeType pick(uint8_t types, uint8_t allowed) {
    uint8_t t = types & allowed;
    if (t & kWW)
        return kWW;
    if (t & kWR)
        return kWR;
    return kRW;
}

// A shortest path from -> to over edges in `mask`, staying among nodes whose
// `comp` equals comp[from]. Empty when none. `budget` bounds the work.
std::vector<CycleEdge> bfsPath(const Local& g, const std::vector<uint32_t>& comp, uint32_t from,
                               uint32_t to, uint8_t mask, uint64_t* budget) {
    const size_t n = g.out.size();
    *budget -= std::min<uint64_t>(*budget, n);
    std::vector<uint32_t> parent(n, kNone);
    std::vector<uint8_t> parentType(n, 0);
    std::deque<uint32_t> queue{from};
    parent[from] = from;
    while (!queue.empty() && *budget > 0) {
        uint32_t v = queue.front();
        queue.pop_front();
        if (v == to)
            break;
        for (const auto& e : g.out[v]) {
            *budget -= *budget > 0;  // saturating: the loops stop at 0
            if ((e.types & mask) == 0 || parent[e.to] != kNone || comp[e.to] != comp[from])
                continue;
            parent[e.to] = v;
            parentType[e.to] = pick(e.types, mask);
            queue.push_back(e.to);
        }
    }
    std::vector<CycleEdge> path;
    if (parent[to] == kNone)
        return path;
    for (uint32_t v = to; v != from; v = parent[v])
        path.push_back({parent[v], v, EdgeType(parentType[v])});
    std::reverse(path.begin(), path.end());
    return path;
}

// A cycle starting with an edge u -> v of `seedType` inside one component of
// `comp`, closed by a path v -> u over `pathMask`.
std::vector<CycleEdge> cycleThrough(const Local& g, const std::vector<uint32_t>& comp,
                                    EdgeType seedType, uint8_t pathMask, uint64_t* budget) {
    for (uint32_t u = 0; u < g.out.size() && *budget > 0; ++u) {
        for (const auto& e : g.out[u]) {
            if ((e.types & seedType) == 0 || comp[e.to] != comp[u])
                continue;
            std::vector<CycleEdge> path = bfsPath(g, comp, e.to, u, pathMask, budget);
            if (path.empty())
                continue;
            path.insert(path.begin(), CycleEdge{u, e.to, seedType});
            return path;
        }
    }
    return {};
}

// A cycle whose rw edges are never adjacent (nor the last and the first),
// starting with an rw edge u -> v: a breadth-first search over (node, came
// in by rw) from (v, yes) to (u, no), where an rw edge may not follow one.
std::vector<CycleEdge> nonadjacentCycle(const Local& g, uint64_t* budget) {
    const size_t n = g.out.size();
    for (uint32_t u = 0; u < n && *budget > 0; ++u) {
        for (const auto& seed : g.out[u]) {
            if (*budget == 0)
                return {};
            if ((seed.types & kRW) == 0)
                continue;
            *budget -= std::min<uint64_t>(*budget, 2 * n);
            // State s = node * 2 + (entered by rw).
            std::vector<uint32_t> parent(2 * n, kNone);
            std::vector<uint8_t> parentType(2 * n, 0);
            const uint32_t start = seed.to * 2 + 1, goal = u * 2;
            std::deque<uint32_t> queue{start};
            parent[start] = start;
            while (!queue.empty() && *budget > 0 && parent[goal] == kNone) {
                const uint32_t s = queue.front();
                queue.pop_front();
                const uint32_t x = s / 2;
                const bool inByRw = s % 2;
                for (const auto& e : g.out[x]) {
                    *budget -= *budget > 0;  // saturating: the loops stop at 0
                    auto step = [&](uint32_t next, EdgeType type) {
                        if (parent[next] != kNone)
                            return;
                        parent[next] = s;
                        parentType[next] = type;
                        queue.push_back(next);
                    };
                    if (e.types & (kWW | kWR))
                        step(e.to * 2, pick(e.types, kWW | kWR));
                    if ((e.types & kRW) && !inByRw)
                        step(e.to * 2 + 1, kRW);
                }
            }
            if (parent[goal] == kNone)
                continue;
            std::vector<CycleEdge> cycle;
            for (uint32_t s = goal; s != start; s = parent[s])
                cycle.push_back({parent[s] / 2, s / 2, EdgeType(parentType[s])});
            cycle.push_back({u, seed.to, kRW});
            std::reverse(cycle.begin(), cycle.end());
            return cycle;
        }
    }
    return {};
}

}  // namespace

void DependencyGraph::addEdge(uint32_t from, uint32_t to, EdgeType type, EdgeReason reason) {
    if (from == to)
        return;
    auto [it, inserted] = reasons_.try_emplace(reasonKey(from, to, type), std::move(reason));
    (void)it;
    if (!inserted)
        return;
    for (Out& o : out_[from])
        if (o.to == to) {
            o.types |= type;
            return;
        }
    out_[from].push_back({to, uint8_t(type)});
}

const EdgeReason& DependencyGraph::reason(const CycleEdge& edge) const {
    return reasons_.at(reasonKey(edge.from, edge.to, edge.type));
}

std::vector<std::vector<uint32_t>> DependencyGraph::components() const {
    std::vector<uint32_t> comp = tarjan(out_, kWW | kWR | kRW);
    std::vector<std::vector<uint32_t>> byId;
    for (uint32_t v = 0; v < comp.size(); ++v) {
        if (comp[v] >= byId.size())
            byId.resize(comp[v] + 1);
        byId[comp[v]].push_back(v);
    }
    std::vector<std::vector<uint32_t>> result;
    for (auto& c : byId)
        if (c.size() > 1)
            result.push_back(std::move(c));
    return result;
}

std::vector<std::vector<CycleEdge>> DependencyGraph::cyclesOf(
    const std::vector<uint32_t>& component) const {
    Local g;
    g.global = component;
    std::unordered_map<uint32_t, uint32_t> localOf;
    for (uint32_t i = 0; i < component.size(); ++i)
        localOf.emplace(component[i], i);
    g.out.resize(component.size());
    for (uint32_t i = 0; i < component.size(); ++i)
        for (const Out& o : out_[component[i]])
            if (auto it = localOf.find(o.to); it != localOf.end())
                g.out[i].push_back({it->second, o.types});

    // Work bound for the rw searches (one BFS per rw edge at worst).
    uint64_t budget = 50'000'000;
    std::vector<std::vector<CycleEdge>> cycles;
    auto keep = [&](std::vector<CycleEdge> cycle) {
        if (cycle.empty())
            return;
        for (CycleEdge& e : cycle) {
            e.from = g.global[e.from];
            e.to = g.global[e.to];
        }
        cycles.push_back(std::move(cycle));
    };
    std::vector<uint32_t> wwComp = tarjan(g.out, kWW);
    keep(cycleThrough(g, wwComp, kWW, kWW, &budget));
    std::vector<uint32_t> wwwrComp = tarjan(g.out, kWW | kWR);
    keep(cycleThrough(g, wwwrComp, kWR, kWW | kWR, &budget));
    // Exactly one rw: an rw edge u -> v closed by a ww/wr path v -> u, which
    // may leave the ww/wr components: search the whole component.
    std::vector<uint32_t> whole(g.out.size(), 0);
    std::vector<CycleEdge> single = cycleThrough(g, whole, kRW, kWW | kWR, &budget);
    const bool foundSingle = !single.empty();
    keep(std::move(single));
    if (!foundSingle) {
        // A budget of its own: a component whose cycles all have adjacent
        // rw edges must leave the G2-item search its share.
        uint64_t nonadjacentBudget = 50'000'000;
        std::vector<CycleEdge> nonadjacent = nonadjacentCycle(g, &nonadjacentBudget);
        const bool foundNonadjacent = !nonadjacent.empty();
        keep(std::move(nonadjacent));
        if (!foundNonadjacent)
            keep(cycleThrough(g, whole, kRW, kWW | kWR | kRW, &budget));
    }
    return cycles;
}

}  // namespace mvkv::check
