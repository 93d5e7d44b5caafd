#include "support/listening_ports.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hora::test_support {

namespace {

// Inodes of the sockets among the process's descriptors: /proc/<pid>/fd/N
// links read "socket:[inode]". The table of /proc/<pid>/net/tcp lists every
// socket of the network namespace, so this is what makes the result this
// process's own.
std::set<unsigned long> socketInodes(pid_t pid) {
  std::set<unsigned long> inodes;
  std::error_code error;
  const std::filesystem::path dir = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    if (error || target.rfind("socket:[", 0) != 0) continue;
    inodes.insert(std::stoul(target.substr(8)));
  }
  return inodes;
}

// Rows: "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout
// inode ..."; local_address is HEXADDR:HEXPORT, st 0A is LISTEN.
void addListening(const std::string& table, const std::set<unsigned long>& inodes,
                  std::set<int>& ports) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
    unsigned long inode = 0;
    if (!(row >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode))
      continue;
    if (state != "0A" || inodes.count(inode) == 0) continue;
    std::size_t colon = local.rfind(':');
    if (colon != std::string::npos) ports.insert(std::stoi(local.substr(colon + 1), nullptr, 16));
  }
}

}  // namespace

std::set<int> listeningPorts(pid_t pid) {
  std::set<int> ports;
  const std::set<unsigned long> inodes = socketInodes(pid);
  if (inodes.empty()) return ports;
  const std::string net = "/proc/" + std::to_string(pid) + "/net/";
  addListening(net + "tcp", inodes, ports);
  addListening(net + "tcp6", inodes, ports);
  return ports;
}

}  // namespace hora::test_support
