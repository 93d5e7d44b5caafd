#include "base/process_state.h"

#include <signal.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace hora {

namespace {
// The state letter of /proc/<pid>/stat ("pid (comm) S ..."; it follows the
// last ')', since the command name may itself hold parentheses), or 0.
char processStateLetter(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return 0;
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return 0;
  return text[close + 2];
}
}  // namespace

bool processGone(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  const char state = processStateLetter(pid);
  return state == 'Z' || state == 'X';
}

bool processStopped(pid_t pid) {
  if (pid <= 0) return false;
  const char state = processStateLetter(pid);
  return state == 'T' || state == 't';
}

}  // namespace hora
