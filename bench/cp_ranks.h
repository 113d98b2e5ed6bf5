// cp_ranks.h: CpRanks, the GPU ranks of one `cplab-bench cp` run on either backend, and how they
// are driven.
//
// What it is: the P GpuCpRanks (cuda/cp/cp_gpu.h) of a GpuCpSpec with their communicators:
//   local  one LocalWorld: P virtual ranks on this GPU, driven by this thread as one group
//   nccl   NcclComm::init_all(P): rank r on GPU r, each driven by its own thread (run_per_rank),
//          a group of one rank each; needs P visible GPUs
// run(fn) calls fn(group) for every group (in its thread, with its device current) and returns
// when every rank's streams are idle; TileTimes are kept per group.
// What it is not: a multi-node launch (cplab-comm-check --backend mpi covers mpirun), or a timer.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cp_gpu.h"
#include "local_comm.h"
#if CPLAB_HAVE_NCCL
#include "nccl_comm.h"
#endif

namespace cplab::bench {

class CpRanks {
 public:
  // builds every rank (allocations on its device); throws cplab::Error for an unusable backend
  CpRanks(const cuda::GpuCpSpec& s, const std::string& backend);
  ~CpRanks();
  CpRanks(const CpRanks&) = delete;
  CpRanks& operator=(const CpRanks&) = delete;

  std::size_t groups() const { return groups_.size(); }
  const std::vector<cuda::GpuCpRank*>& group(std::size_t g) const { return groups_[g]; }
  // fn(g) for every group g, each in its thread with its device current; then every stream is idle
  void run(const std::function<void(std::size_t)>& fn);
  cuda::GpuCpRank& rank(std::int64_t r) { return *own_[static_cast<std::size_t>(r)]; }
  // where rank r's times are: (group, index in the group)
  std::pair<std::size_t, std::size_t> where(std::int64_t r) const;
  std::uint64_t bytes_sent() const;  // all ranks, to other ranks
  std::string describe() const;      // "8 virtual ranks on one GPU (LocalComm)" ...
  // the GPUs the ranks run on: 1 for local (every virtual rank shares GPU 0), P for nccl
  std::size_t gpus() const { return world_ ? 1 : own_.size(); }

 private:
  std::string backend_;
  std::unique_ptr<cuda::LocalWorld> world_;
#if CPLAB_HAVE_NCCL
  std::vector<std::unique_ptr<cuda::NcclComm>> nccl_;
#endif
  std::vector<std::unique_ptr<cuda::GpuCpRank>> own_;
  std::vector<std::vector<cuda::GpuCpRank*>> groups_;
};

}  // namespace cplab::bench
