#include "protocol/server.h"

#include <mutex>
#include <utility>

namespace mcpexec {

void Server::SetResources(std::shared_ptr<ResourceReader> reader) {
  std::unique_lock<std::shared_mutex> lock(resources_mu_);
  resources_ = std::move(reader);
}

std::optional<Resource> Server::ReadResource(const std::string& uri) {
  std::shared_lock<std::shared_mutex> lock(resources_mu_);
  return resources_ ? resources_->Read(uri) : std::nullopt;
}

}  // namespace mcpexec
