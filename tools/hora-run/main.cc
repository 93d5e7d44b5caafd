// hora-run: starts the ranks of a distributed job on this node, the way
// torchrun does, and supervises them. See docs/hora-run.md.
#include <unistd.h>

#include <exception>
#include <string>
#include <vector>

#include "exit_status.h"
#include "free_port.h"
#include "launch_options.h"
#include "posix_io.h"
#include "supervisor.h"

using namespace hora::launcher;

int main(int argc, char** argv) {
  LaunchOptions options;
  try {
    options = parse_launch_options(std::vector<std::string>(argv + 1, argv + argc));
    if (!options.show_help) check_rank_count_fits(options, read_process_limits());
  } catch (const UsageError& error) {
    write_all(STDERR_FILENO, std::string("hora-run: ") + error.what() + "\nTry 'hora-run --help' for usage.\n");
    return kExitUsage;
  }
  if (options.show_help) {
    write_all(STDOUT_FILENO, usage_text());
    return 0;
  }

  try {
    int master_port = options.master_port ? *options.master_port
                      : options.nnodes == 1 ? pick_free_port()
                                            : kDefaultMultiNodePort;
    Supervisor supervisor(std::move(options), master_port);
    return supervisor.run();
  } catch (const std::exception& error) {
    write_all(STDERR_FILENO, std::string("hora-run: ") + error.what() + "\n");
    return kExitLauncherFailure;
  }
}
