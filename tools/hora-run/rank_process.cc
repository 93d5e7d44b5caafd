#include "rank_process.h"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "posix_io.h"

namespace hora::launcher {
namespace {

std::vector<char*> null_terminated(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const std::string& text : strings) pointers.push_back(const_cast<char*>(text.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// Runs in the forked child. Only async-signal-safe calls: the launcher has
// threads (queued_writer.h), and one of them may have held a lock, the
// allocator's say, at the moment of fork().
[[noreturn]] void become_rank(const SpawnRequest& request, char* const* argv, char* const* envp, int status_fd,
                              pid_t launcher) {
  // Our own process group: a terminal's Ctrl-C reaches the launcher only,
  // which forwards it once, and stopping a rank reaches its whole tree.
  ::setpgid(0, 0);
  // A launcher killed outright (SIGKILL, out of memory) cannot stop its
  // ranks, and in groups of their own no terminal signal reaches them:
  // the kernel kills each rank when the launcher dies. (Checked after
  // arming: the launcher may have died already.)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::_exit(127);
  for (const auto& [signal_number, action] : request.signal_actions) ::sigaction(signal_number, &action, nullptr);
  ::sigprocmask(SIG_SETMASK, &request.signal_mask, nullptr);
  // Bound before exec, so the program's first thread, and every thread it
  // starts, inherits the CPUs.
  if (!request.affinity_mask.empty() &&
      ::sched_setaffinity(0, request.affinity_mask.size(),
                          reinterpret_cast<const cpu_set_t*>(request.affinity_mask.data())) != 0) {
    int error = -errno;  // negative: binding failed, not exec
    (void)!::write(status_fd, &error, sizeof(error));
    ::_exit(127);
  }
  if ((request.stdin_fd >= 0 && ::dup2(request.stdin_fd, STDIN_FILENO) < 0) ||
      (request.stdout_fd >= 0 && ::dup2(request.stdout_fd, STDOUT_FILENO) < 0) ||
      (request.stderr_fd >= 0 && ::dup2(request.stderr_fd, STDERR_FILENO) < 0)) {
    int error = errno;
    (void)!::write(status_fd, &error, sizeof(error));
    ::_exit(127);
  }
  ::execvpe(argv[0], argv, envp);
  int error = errno;
  (void)!::write(status_fd, &error, sizeof(error));
  ::_exit(127);
}

}  // namespace

pid_t spawn_rank(const SpawnRequest& request) {
  // Everything the child needs is built before fork(): allocating after it
  // is not safe in general.
  std::vector<char*> argv = null_terminated(request.command);
  std::vector<char*> envp = null_terminated(request.environment);
  const pid_t launcher = ::getpid();
  // exec() closes this close-on-exec pipe: reading end-of-file means the
  // program started; reading an errno means it did not.
  Pipe exec_status = make_pipe("reporting whether the program started");

  pid_t pid = ::fork();
  if (pid < 0) throw_errno("cannot fork a process for '" + request.command.front() + "'");
  if (pid == 0) become_rank(request, argv.data(), envp.data(), exec_status.write_end.get(), launcher);

  exec_status.write_end.reset();
  int child_errno = 0;
  ssize_t count;
  do {
    count = ::read(exec_status.read_end.get(), &child_errno, sizeof(child_errno));
  } while (count < 0 && errno == EINTR);
  if (count == 0) return pid;

  // The child already exited (or will at once); reap it here so it never
  // shows up as a failed rank.
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (count != static_cast<ssize_t>(sizeof(child_errno))) {
    throw SpawnError("cannot start '" + request.command.front() + "': the child reported nothing intelligible",
                     false);
  }
  if (child_errno < 0)
    throw SpawnError("cannot bind '" + request.command.front() + "' to its CPUs: " + std::strerror(-child_errno),
                     false);
  throw SpawnError("cannot start '" + request.command.front() + "': " + std::strerror(child_errno),
                   child_errno == ENOENT || child_errno == ENOTDIR);
}

}  // namespace hora::launcher
