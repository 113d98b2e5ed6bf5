// omp_policy.h: how cplab's programs use OpenMP on a machine they share.
//
// What it is: passive_omp_wait(argv), called first in main() of cplab and cplab-viz. OpenMP
// threads that finish a parallel region early spin (busy-wait) for the others by default; on a
// machine that is also running other work (a build, a second tool) those spinning threads take
// the cores the working ones need, and small runs pay the spin on every region (measured: a
// 42-token run 0.09 s against 0.00 s). With OMP_WAIT_POLICY=PASSIVE idle threads sleep instead.
// The OpenMP runtime reads that variable once, when the program loads, so when the user has not
// set it this function sets it and re-executes the program (/proc/self/exe, same arguments); a
// user's own OMP_WAIT_POLICY or OMP_NUM_THREADS is respected. Results do not depend on any of
// this (the reference parallelises over heads and row blocks, each computed by one thread).
// What it is not: a thread-count policy (OMP_NUM_THREADS chooses; the default is the cores).
#pragma once

namespace cplab {

// returns only if the policy is already set, or the re-execution failed (then nothing changes)
void passive_omp_wait(char** argv);

}  // namespace cplab
