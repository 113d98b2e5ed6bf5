// comm_check.cpp: cplab-comm-check, a smoke test of one Comm backend on this machine.
//
//   cplab-comm-check [--backend local|nccl|mpi] [--ranks N] [--bytes B]
//   mpirun -np 8 cplab-comm-check --backend mpi
//
// What it is: runs every check of comm_check_run.h (ring exchange, all-gather, all-to-all, all-gather
// over the even ranks) twice, verifies every byte on the host and prints one line per check (the
// second run's time). Backends: local (N virtual ranks on GPU 0, default N = 4), nccl (one
// process, a thread per GPU, default N = all GPUs), mpi (a process per GPU; N comes from mpirun).
// Exit status: 0 all checks pass; 1 a check failed or a communication error; 2 bad arguments;
// 77 skipped (no usable CUDA device: "cplab-comm-check: skipped: no CUDA device (<reason>)",
// printed at once, before any NCCL call; also fewer GPUs than ranks, or a backend not built).
// What it is not: a benchmark (use nccl-tests for link bandwidth) or a CP algorithm.
#include "comm_check_run.h"
#include "device.h"
#include "local_comm.h"
#ifdef CPLAB_HAVE_NCCL
#include "nccl_comm.h"
#endif
#ifdef CPLAB_HAVE_MPI
#include "mpi_launch.h"
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace cplab::cuda;
using Clock = std::chrono::steady_clock;

constexpr int kSkip = 77, kBadArgs = 2, kFailed = 1;
constexpr int kIterations = 2;  // the first run includes set-up (NCCL connections); the second is reported

struct Args {
  std::string backend = "local";
  int ranks = -1;  // -1: the backend's default
  std::size_t bytes = 1 << 20;
};

struct BadArgs : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* kUsage =
    "usage: cplab-comm-check [--backend local|nccl|mpi] [--ranks N] [--bytes B]\n"
    "  --backend  local: N virtual ranks on GPU 0 (default); nccl: a thread per GPU; mpi: a process per GPU\n"
    "  --ranks    ranks (local: default 4, 1..4096; nccl: default all GPUs; mpi: from mpirun)\n"
    "  --bytes    bytes per block, 1..1073741824 (default 1048576)\n";

long long parse_integer(const std::string& flag, const std::string& v, long long lo, long long hi) {
  std::size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size()) throw BadArgs(flag + " '" + v + "': expected an integer");
  if (x < lo || x > hi)
    throw BadArgs(flag + " " + v + ": expected " + std::to_string(lo) + " <= value <= " + std::to_string(hi));
  return x;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    const auto eq = flag.find('=');
    const bool inline_value = flag.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (flag == "-h" || flag == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (flag != "--backend" && flag != "--ranks" && flag != "--bytes") throw BadArgs("unknown argument '" + flag + "'");
    if (!inline_value) {
      if (i + 1 >= argc) throw BadArgs(flag + " needs a value");
      value = argv[++i];
    }
    if (flag == "--backend") {
      if (value != "local" && value != "nccl" && value != "mpi")
        throw BadArgs("--backend '" + value + "': unknown backend (expected local, nccl or mpi)");
      a.backend = value;
    } else if (flag == "--ranks") {
      a.ranks = static_cast<int>(parse_integer(flag, value, 1, 4096));
    } else {
      a.bytes = static_cast<std::size_t>(parse_integer(flag, value, 1, 1ll << 30));
    }
  }
  return a;
}

// What every rank's run of one check produced.
struct Outcome {
  double ms = 0;             // host time of the reported run: issue to completion (max over ranks)
  std::uint64_t bytes = 0;   // bytes sent to other ranks in the reported run, all ranks together
  std::vector<std::string> errors;
};

int report(const char* backend, int P, std::size_t B, CheckKind kind, const Outcome& o) {
  const bool ok = o.errors.empty();
  std::printf("cplab-comm-check: %s: %s (%s, %d ranks, %zu B blocks, %llu B sent, %.3f ms)\n", check_name(kind),
              ok ? "ok" : "FAILED", backend, P, B, static_cast<unsigned long long>(o.bytes), o.ms);
  for (const auto& e : o.errors) std::printf("cplab-comm-check:   %s\n", e.c_str());
  std::fflush(stdout);
  return ok ? 0 : kFailed;
}

// One thread drives all ranks, phase by phase (the rule of local_comm.h).
int run_local(const Args& a) {
  const int P = a.ranks < 0 ? 4 : a.ranks;
  std::printf("cplab-comm-check: backend local, %d virtual ranks on %s\n", P, device_summary().c_str());
  LocalWorld world(P);
  std::vector<std::unique_ptr<RankCheck>> ranks;
  for (int r = 0; r < P; ++r) ranks.push_back(std::make_unique<RankCheck>(world.rank(r), a.bytes));
  int status = 0;
  for (const CheckKind kind : kAllChecks) {
    Outcome o;
    for (int it = 0; it < kIterations; ++it) {
      o = Outcome{};
      const std::uint64_t before = world.total_bytes_sent();
      for (auto& r : ranks) r->prepare(kind);
      for (auto& r : ranks) r->wait();  // the upload is not part of the timed region
      const auto t0 = Clock::now();
      for (auto& r : ranks) r->issue(kind);
      world.finish();  // every operation matched: a schedule bug throws here instead of hanging
      for (auto& r : ranks) r->wait();
      o.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      o.bytes = world.total_bytes_sent() - before;
      for (auto& r : ranks)
        if (std::string e = r->verify(kind); !e.empty()) o.errors.push_back(e);
    }
    status |= report("local", P, a.bytes, kind, o);
  }
  return status;
}

#ifdef CPLAB_HAVE_NCCL
// One rank's whole sequence of checks; the caller combines ranks (threads or MPI processes).
std::vector<Outcome> run_rank(Comm& comm, std::size_t B) {
  RankCheck rc(comm, B);
  std::vector<Outcome> out;
  for (const CheckKind kind : kAllChecks) {
    Outcome o;
    for (int it = 0; it < kIterations; ++it) {
      o = Outcome{};
      const std::uint64_t before = comm.bytes_sent();
      rc.prepare(kind);
      rc.wait();  // the upload is not part of the timed region
      const auto t0 = Clock::now();
      rc.issue(kind);
      rc.wait();
      o.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      o.bytes = comm.bytes_sent() - before;
      if (std::string e = rc.verify(kind); !e.empty()) o.errors.push_back(e);
    }
    out.push_back(o);
  }
  return out;
}

int run_nccl(const Args& a) {
  const int n = device_count();
  const int P = a.ranks < 0 ? n : a.ranks;
  if (P > n) {
    std::printf("cplab-comm-check: skipped: --ranks %d needs %d GPUs (one rank per GPU), found %d\n", P, P, n);
    return kSkip;
  }
  std::printf("cplab-comm-check: backend nccl, %d ranks (a thread per GPU), GPU 0: %s\n", P, device_summary().c_str());
  const auto comms = NcclComm::init_all(P);
  std::vector<std::vector<Outcome>> per_rank(static_cast<std::size_t>(P));
  run_per_rank(comms, [&](NcclComm& c) { per_rank[static_cast<std::size_t>(c.rank())] = run_rank(c, a.bytes); });
  int status = 0;
  for (std::size_t k = 0; k < kAllChecks.size(); ++k) {
    Outcome all;
    for (const auto& r : per_rank) {
      all.ms = std::max(all.ms, r[k].ms);
      all.bytes += r[k].bytes;
      all.errors.insert(all.errors.end(), r[k].errors.begin(), r[k].errors.end());
    }
    status |= report("nccl", P, a.bytes, kAllChecks[k], all);
  }
  return status;
}
#endif

int run_mpi(const Args& a, int argc, char** argv) {
#if defined(CPLAB_HAVE_MPI) && defined(CPLAB_HAVE_NCCL)
  MpiSession mpi(argc, argv);
  const bool root = mpi.rank() == 0;
  if (const MpiDeviceProblem problem = mpi_device_problem(mpi); !problem.text.empty()) {
    if (root && problem.fault)
      std::printf("cplab-comm-check: error: this machine has an NVIDIA driver (/dev/nvidiactl) but CUDA cannot use a rank's GPU: %s\n",
                  problem.text.c_str());
    else if (root)
      std::printf("cplab-comm-check: skipped: no CUDA device (%s)\n", problem.text.c_str());
    return problem.fault ? kFailed : kSkip;
  }
  if (a.ranks >= 0 && a.ranks != mpi.size()) {
    if (root)
      std::fprintf(stderr, "cplab-comm-check: error: --ranks %d but mpirun started %d processes\n", a.ranks, mpi.size());
    return kBadArgs;
  }
  // Outside the try: an error must abort the communicator (not finalize it, which waits for the
  // other ranks up to the NCCL time-out) before MPI_Abort ends the job.
  std::unique_ptr<NcclComm> comm;
  try {
    if (root) std::printf("cplab-comm-check: backend mpi, %d processes, rank 0 on %s\n", mpi.size(), device_summary().c_str());
    comm = nccl_comm_from_mpi(mpi);
    const std::vector<Outcome> mine = run_rank(*comm, a.bytes);
    int status = 0;
    for (std::size_t k = 0; k < kAllChecks.size(); ++k) {
      for (const auto& e : mine[k].errors) std::fprintf(stderr, "cplab-comm-check: %s\n", e.c_str());
      Outcome all;
      all.ms = mpi.max(mine[k].ms);
      all.bytes = static_cast<std::uint64_t>(mpi.sum(static_cast<long long>(mine[k].bytes)));
      if (const long long bad = mpi.sum(mine[k].errors.empty() ? 0 : 1); bad > 0)
        all.errors.push_back(std::to_string(bad) + " rank(s) received wrong data (their lines are on stderr)");
      if (root) status |= report("mpi", mpi.size(), a.bytes, kAllChecks[k], all);
      else status |= all.errors.empty() ? 0 : kFailed;
    }
    return status;
  } catch (const std::exception& e) {
    // Another rank may be waiting on this one: end the whole job now rather than let it time out.
    std::fprintf(stderr, "cplab-comm-check: error on rank %d: %s\n", mpi.rank(), e.what());
    std::fflush(stderr);
    if (comm) comm->abort();
    mpi.abort(kFailed);
  }
#else
  (void)a, (void)argc, (void)argv;
  std::printf("cplab-comm-check: skipped: built without MPI (or without NCCL): CMake found no MPI / NCCL\n");
  return kSkip;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  try {
    a = parse(argc, argv);
  } catch (const BadArgs& e) {
    std::fprintf(stderr, "cplab-comm-check: error: %s\n%s", e.what(), kUsage);
    return kBadArgs;
  }
  try {
    if (a.backend == "mpi") return run_mpi(a, argc, argv);  // checks the devices of every rank itself
    if (const auto rc = no_device_exit("cplab-comm-check: ")) return *rc;
    if (a.backend == "local") return run_local(a);
#ifdef CPLAB_HAVE_NCCL
    return run_nccl(a);
#else
    std::printf("cplab-comm-check: skipped: built without NCCL (CMake did not find nccl.h / libnccl)\n");
    return kSkip;
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cplab-comm-check: error: %s\n", e.what());
    return kFailed;
  }
}
