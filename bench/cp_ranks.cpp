// cp_ranks.cpp: CpRanks (see cp_ranks.h).
#include "cp_ranks.h"

#include "device.h"
#include "core/error.h"

namespace cplab::bench {

using namespace cplab::cuda;

namespace {

void sync_streams(GpuCpRank& x) {
  for (cudaStream_t st : x.streams()) x.comm().synchronize(st);
}

}  // namespace

CpRanks::CpRanks(const GpuCpSpec& s, const std::string& backend) : backend_(backend) {
  const int P = static_cast<int>(s.cp.P());
  own_.resize(static_cast<std::size_t>(P));
  if (backend == "local") {
    world_ = std::make_unique<LocalWorld>(P);
    for (int r = 0; r < P; ++r) own_[static_cast<std::size_t>(r)] = std::make_unique<GpuCpRank>(s, world_->rank(r));
    groups_.emplace_back();
    for (auto& x : own_) groups_[0].push_back(x.get());
    return;
  }
#if CPLAB_HAVE_NCCL
  require(device_count() >= P, "--backend nccl --cp " + std::to_string(P) + " needs " + std::to_string(P) +
                                   " GPUs, one per rank (this machine has " + std::to_string(device_count()) +
                                   "); --backend local runs the ranks as virtual ranks on one GPU");
  nccl_ = NcclComm::init_all(P);
  run_per_rank(nccl_, [&](NcclComm& c) {
    c.check_same_config(cuda::describe(s));
    own_[static_cast<std::size_t>(c.rank())] = std::make_unique<GpuCpRank>(s, c);
  });
  for (auto& x : own_) groups_.push_back({x.get()});
#else
  throw Error("--backend nccl: this build has no NCCL (cuda/comm was built without it); use --backend local");
#endif
}

CpRanks::~CpRanks() {
#if CPLAB_HAVE_NCCL
  if (!nccl_.empty()) {  // free every rank's memory on its own device
    try {
      run_per_rank(nccl_, [&](NcclComm& c) { own_[static_cast<std::size_t>(c.rank())].reset(); });
    } catch (...) {
    }
  }
#endif
}

void CpRanks::run(const std::function<void(std::size_t)>& fn) {
  if (world_) {
    fn(0);
    world_->finish();
    for (auto& x : own_) sync_streams(*x);
    return;
  }
#if CPLAB_HAVE_NCCL
  run_per_rank(nccl_, [&](NcclComm& c) {
    fn(static_cast<std::size_t>(c.rank()));
    sync_streams(*own_[static_cast<std::size_t>(c.rank())]);
  });
#endif
}

std::pair<std::size_t, std::size_t> CpRanks::where(std::int64_t r) const {
  if (world_) return {0, static_cast<std::size_t>(r)};
  return {static_cast<std::size_t>(r), 0};
}

std::uint64_t CpRanks::bytes_sent() const {
  std::uint64_t b = 0;
  for (const auto& x : own_) b += x->comm().bytes_sent();
  return b;
}

std::string CpRanks::describe() const {
  const std::string P = std::to_string(own_.size());
  if (world_) return P + " virtual ranks on one GPU (LocalComm: transfers are device-to-device copies)";
  return P + " ranks on " + P + " GPUs (NCCL, a thread per GPU)";
}

}  // namespace cplab::bench
