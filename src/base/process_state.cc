#include "base/process_state.h"

#include <signal.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace hora {

bool processGone(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  // /proc/<pid>/stat: "pid (comm) S ...": the state follows the last ')'
  // (the command name may itself hold parentheses).
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace hora
