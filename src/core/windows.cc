#include "core/windows.h"

#include <functional>
#include <utility>

#include "base/error.h"

namespace hora::core {

int WindowTable::add(Window window) {
  const int id = nextId_++;
  everUsable_ = everUsable_ || window.usable;
  windows_.emplace(id, std::move(window));
  return id;
}

void WindowTable::remove(int id) {
  HORA_CHECK_ARG(windows_.erase(id) == 1, "window ", id,
                 " is not registered with this communicator (deregistered already?)");
}

std::optional<WindowLocation> WindowTable::find(const void* ptr, std::size_t bytes) const {
  const char* address = static_cast<const char*>(ptr);
  for (const auto& [id, window] : windows_) {
    if (!window.usable) continue;
    // std::less gives a total order over unrelated pointers.
    if (std::less<const char*>()(address, window.local)) continue;
    const auto offset = static_cast<std::size_t>(address - window.local);
    if (offset <= window.bytes && bytes <= window.bytes - offset) return WindowLocation{id, offset};
  }
  return std::nullopt;
}

char* WindowTable::address(int id, int rank, std::size_t offset, std::size_t bytes) const {
  auto found = windows_.find(id);
  if (found == windows_.end() || !found->second.usable) return nullptr;
  const Window& window = found->second;
  if (rank < 0 || rank >= static_cast<int>(window.rankBases.size())) return nullptr;
  const std::size_t rankBytes = window.rankBytes[static_cast<std::size_t>(rank)];
  if (offset > rankBytes || bytes > rankBytes - offset) return nullptr;
  return window.rankBases[rank] + offset;
}

}  // namespace hora::core
