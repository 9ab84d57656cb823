// Fair shares of a bounded pool of per-client entries (the HTTP transport's
// MCP sessions, the Python sessions): when a client asks for one more, whose
// idle entry gives way, so that no client can keep every other out.
#pragma once

#include <cstddef>
#include <map>
#include <optional>

namespace mcpexec {

// held: how many entries each client holds, the asker included. The asker
// itself gives way once it holds `share`; with the pool full, the client
// that holds the most does, if it holds at least two more than the asker (so
// that taking one never makes it the smaller). nullopt: nobody does.
template <typename Client>
std::optional<Client> WhoGivesWay(const std::map<Client, size_t>& held, const Client& asker,
                                  size_t share, bool full) {
  const size_t mine = held.count(asker) ? held.at(asker) : 0;
  if (mine >= share) return asker;
  if (!full) return std::nullopt;
  std::optional<Client> top;
  for (const auto& [client, n] : held) {
    if (n > mine + 1 && (!top || n > held.at(*top))) top = client;
  }
  return top;
}

}  // namespace mcpexec
