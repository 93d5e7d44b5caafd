// Which rank this process is, and where rank 0 waits for the others, read
// from the variables a launcher sets for every process it starts:
//
//   torchrun, hora-run  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
//   Open MPI's mpirun   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
//   PMI (MPICH's and    PMI_RANK, PMI_SIZE
//     Intel MPI's mpiexec)
//   Slurm's srun        SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID
//                       and the tasks-per-node list; the node list for MASTER_ADDR
//
// Precedence, when several launchers' variables are set: torchrun's, then
// Open MPI's, then PMI's, then Slurm's. A process inherits the variables of
// every launcher above it, and the innermost launcher is the one that knows
// its rank: torchrun or hora-run started inside an srun step (or by hand,
// with RANK set) leaves SLURM_PROCID at the step's task number, which counts
// nodes, not ranks; an mpirun inside a Slurm allocation leaves the
// allocation's SLURM_* behind. RANK is only ever set on purpose, so it wins;
// OMPI_COMM_WORLD_* is set by Open MPI for exactly the processes it starts,
// while PMI_* may come from an outer process manager; Slurm's variables
// describe the whole allocation and come last. The variables of one launcher
// are never mixed with another's.
//
// Every function takes a Lookup (getenv by default) so tests need not touch
// the process environment. Bad values are hora::Error(InvalidArgument)
// naming the variable, its value and what to set instead.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hora::launcher {

// The value of one variable, or nullptr when it is unset. An empty value
// counts as unset, as everywhere in hora (base/env.h).
using Lookup = std::function<const char*(const char* name)>;
const char* processVariable(const char* name);  // std::getenv

enum class Launcher { Torchrun, OpenMpi, Pmi, Slurm };
const char* launcherName(Launcher launcher);  // "torchrun", "Open MPI", "PMI", "Slurm"

struct Placement {
  Launcher launcher = Launcher::Torchrun;
  int rank = 0;
  int worldSize = 1;
  std::optional<int> localRank;       // this process's index among the ranks of its host
  std::optional<int> localWorldSize;  // ranks on this host; empty where the launcher does not say
};

// The placement the first launcher (in the precedence above) with its rank or
// world-size variable set gives; empty when none is set. Errors: a rank
// without a world size (or the reverse), a value that is not an integer,
// rank >= world size, local rank >= local size, local size > world size.
std::optional<Placement> findPlacement(const Lookup& lookup = processVariable);

// findPlacement, and an error saying what to set when no launcher set anything.
Placement requirePlacement(const Lookup& lookup = processVariable);

struct MasterAddress {
  std::string host;
  int port = 0;
};

// Where rank 0 hosts the rendezvous: MASTER_ADDR:MASTER_PORT. Under Slurm
// (placement from Slurm's variables) MASTER_ADDR defaults to the first host
// of SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST): srun starts task 0 there
// under its block and cyclic distributions. Empty when MASTER_PORT is unset
// but HORA_COMM_ID or NCCL_COMM_ID is set: that variable names the address
// (bootstrap/unique_id.h). Otherwise missing variables are an error that
// says what to set for this launcher. `placement` may be null (rank and world
// size given by the caller): then there is no Slurm default.
std::optional<MasterAddress> masterAddress(const Placement* placement,
                                           const Lookup& lookup = processVariable);

// Slurm's host list syntax: comma-separated hosts, each a name with bracketed
// lists of numbers and ranges, "node[01-04,07],gpu5" -> node01 node02 node03
// node04 node07 gpu5. A range keeps the zero padding of its lower bound.
// Several brackets in one name multiply ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1
// r2n2). `variable` names the text in error messages.
std::vector<std::string> expandSlurmHostList(std::string_view text,
                                             std::string_view variable = "host list");
// The first host of such a list, without expanding the rest (which is
// still checked).
std::string firstSlurmHost(std::string_view text, std::string_view variable = "host list");

// Slurm's tasks-per-node syntax: "2(x3),1" -> 2 2 2 1, one count per node.
std::vector<int> expandSlurmTaskCounts(std::string_view text, std::string_view variable = "task counts");

}  // namespace hora::launcher
