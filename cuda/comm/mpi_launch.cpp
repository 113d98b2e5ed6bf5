// mpi_launch.cpp: MpiSession, mpi_device_problem and nccl_comm_from_mpi (see mpi_launch.h).
//
// What it is: the few MPI calls the launch needs, each checked (MPI's default handler already
// aborts the job on errors; the checks are for a handler someone changed).
// What it is not: anything that moves tensors.
#include "mpi_launch.h"

#include "device.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace cplab::cuda {

namespace {

void mpi_check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CommError(std::string("MPI error: ") + call + ": " + text);
}

constexpr std::size_t kStringBytes = 512;

}  // namespace

MpiSession::MpiSession(int& argc, char**& argv) {
  int initialised = 0;
  mpi_check(MPI_Initialized(&initialised), "MPI_Initialized");
  if (!initialised) {
    mpi_check(MPI_Init(&argc, &argv), "MPI_Init");
    initialised_here_ = true;
  }
  mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  mpi_check(MPI_Comm_rank(node, &local_rank_), "MPI_Comm_rank(node)");
  mpi_check(MPI_Comm_size(node, &local_size_), "MPI_Comm_size(node)");
  mpi_check(MPI_Comm_free(&node), "MPI_Comm_free");
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (initialised_here_ && !finalized) MPI_Finalize();
}

long long MpiSession::sum(long long v) const {
  long long out = 0;
  mpi_check(MPI_Allreduce(&v, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce(SUM)");
  return out;
}

double MpiSession::max(double v) const {
  double out = 0;
  mpi_check(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce(MAX)");
  return out;
}

std::vector<std::string> MpiSession::all_strings(const std::string& s) const {
  std::array<char, kStringBytes> mine{};
  std::memcpy(mine.data(), s.data(), std::min(s.size(), kStringBytes - 1));
  std::vector<char> all(kStringBytes * static_cast<std::size_t>(size_));
  mpi_check(MPI_Allgather(mine.data(), static_cast<int>(kStringBytes), MPI_CHAR, all.data(),
                          static_cast<int>(kStringBytes), MPI_CHAR, MPI_COMM_WORLD),
            "MPI_Allgather");
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) out.emplace_back(all.data() + static_cast<std::size_t>(r) * kStringBytes);
  return out;
}

void MpiSession::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

int mpi_device(const MpiSession& mpi) { return device_count() == 1 ? 0 : mpi.local_rank(); }

MpiDeviceProblem mpi_device_problem(const MpiSession& mpi) {
  const int count = device_count(), device = mpi_device(mpi);
  std::string mine;
  if (count > 0 && device >= count)
    mine = "local rank " + std::to_string(mpi.local_rank()) + " of " + std::to_string(mpi.local_size()) +
           " on its node, but only " + std::to_string(count) +
           " CUDA device(s) are visible there (NCCL allows one rank per GPU)";
  else
    mine = device_unusable_reason(device);
  const bool fault = mpi.sum(!mine.empty() && device_fault(device) ? 1 : 0) > 0;
  const std::vector<std::string> all = mpi.all_strings(mine);
  if (std::all_of(all.begin(), all.end(), [](const std::string& s) { return s.empty(); })) return {};
  if (std::all_of(all.begin(), all.end(), [&](const std::string& s) { return s == all[0]; })) return {all[0], fault};
  std::string out;
  for (std::size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) out += (out.empty() ? "" : "; ") + ("rank " + std::to_string(r) + ": " + all[r]);
  return {out, fault};
}

std::unique_ptr<NcclComm> nccl_comm_from_mpi(const MpiSession& mpi, NcclOptions options) {
  if (const MpiDeviceProblem problem = mpi_device_problem(mpi); !problem.text.empty())
    throw NoDeviceError("nccl_comm_from_mpi: no usable CUDA device on every rank (" + problem.text + ")");
  struct Payload {
    int ok = 0;
    char error[kStringBytes] = {};
    ncclUniqueId id{};
  } payload;
  if (mpi.rank() == 0) {
    try {
      payload.id = NcclComm::unique_id();
      payload.ok = 1;
    } catch (const std::exception& e) {
      std::strncpy(payload.error, e.what(), kStringBytes - 1);
    }
  }
  // Rank 0 broadcasts success or its error, so no rank is left waiting for an id that never comes.
  mpi_check(MPI_Bcast(&payload, static_cast<int>(sizeof payload), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast(ncclUniqueId)");
  if (!payload.ok) throw CommError(std::string("nccl_comm_from_mpi: rank 0 could not make the NCCL id: ") + payload.error);
  return std::make_unique<NcclComm>(payload.id, mpi.rank(), mpi.size(), mpi_device(mpi), std::move(options));
}

}  // namespace cplab::cuda
