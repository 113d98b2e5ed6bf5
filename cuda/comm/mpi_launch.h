// mpi_launch.h: launch path (b) of NcclComm, one process per GPU under mpirun / mpiexec.
//
// What it is: MpiSession (MPI_Init / MPI_Finalize, world rank and size, the rank's index on its
// node, a few agreement helpers), mpi_device_problem (every rank learns whether every rank has a
// usable CUDA device, before anything waits on anything) and nccl_comm_from_mpi (rank 0 makes the
// ncclUniqueId, MPI_Bcast's it, every rank joins on device = its node-local rank,
// or 0 when it sees one GPU: mpi_device). Typical use:
//   cplab::cuda::MpiSession mpi(argc, argv);
//   auto comm = cplab::cuda::nccl_comm_from_mpi(mpi);   // NoDeviceError on every rank without GPUs
//   ... comm->send / recv / all_gather ... ; comm->synchronize(stream);
// Run with `mpirun -np 8 prog` (as root add --allow-run-as-root; more ranks than cores need
// --oversubscribe). Built only when CMake finds MPI (and NCCL).
// What it is not: a data path (MPI only carries the id and yes/no agreements; data moves by NCCL),
// or a way to put several ranks on one GPU (NCCL refuses that; use LocalWorld).
#pragma once

#include "nccl_comm.h"

#include <memory>
#include <string>
#include <vector>

namespace cplab::cuda {

class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);  // MPI_Init unless MPI is already initialised
  ~MpiSession();                        // MPI_Finalize if this session initialised MPI
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // index among the ranks on this node
  int local_size() const { return local_size_; }

  long long sum(long long v) const;  // MPI_Allreduce(SUM) over the world
  double max(double v) const;        // MPI_Allreduce(MAX) over the world
  // Every rank's string (each cut to 511 bytes), indexed by rank, on every rank.
  std::vector<std::string> all_strings(const std::string& s) const;
  [[noreturn]] void abort(int code) const;  // MPI_Abort: ends every rank at once

 private:
  bool initialised_here_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

// The CUDA device of this rank: its node-local rank, or 0 when the process sees exactly one GPU
// (launchers that give each rank its own GPU through CUDA_VISIBLE_DEVICES, e.g. Slurm's
// --gpus-per-task=1). Several ranks that see the same single GPU are refused by NCCL itself.
int mpi_device(const MpiSession& mpi);

// What every rank learns about every rank's device before anything waits on anything (collective).
struct MpiDeviceProblem {
  std::string text;    // "" when every rank's mpi_device() is usable; else the reason itself when
                       // all ranks share it (e.g. no driver), else "rank 1: ...; rank 3: ..."
  bool fault = false;  // some rank's device_fault(): a GPU machine whose GPU CUDA cannot use
};
MpiDeviceProblem mpi_device_problem(const MpiSession& mpi);  // makes no NCCL call

// Collective over MPI_COMM_WORLD: mpi_device_problem (NoDeviceError on every rank if non-empty),
// then rank 0's ncclUniqueId is broadcast and every rank builds NcclComm(id, rank, size,
// device = mpi_device(mpi), options).
std::unique_ptr<NcclComm> nccl_comm_from_mpi(const MpiSession& mpi, NcclOptions options = {});

}  // namespace cplab::cuda
