/*
 * nvf_line_probe.h: the benchmark's gauge of the machine's state: the round trip of one cache
 * line between two ranks of a node, measured before and after each table row.
 *
 * On this project's VMs the round trip takes 40-80 ns for stretches and 300-340 ns for
 * stretches of seconds (bench/results/vcpu-pingpong-2026-12-07-amd.txt), and every module's
 * time moves with it; a row measured in such a spell says so in its column.
 */
#ifndef NVF_LINE_PROBE_H
#define NVF_LINE_PROBE_H

#include <mpi.h>

/* Collective over comm (a communicator without nvfabric). Returns 0 if the probe works here
 * (ranks 0 and 1 of comm share a node), -1 otherwise (then probes measure nothing). */
int nvf_line_probe_open(MPI_Comm comm);

/* Collective over the communicator given to open: ranks 0 and 1 bounce a cache line `rounds`
 * times while the others sleep; returns the mean round trip in ns on rank 0 (-1 elsewhere or
 * without a probe). */
double nvf_line_probe_rtt_ns(int rounds);

void nvf_line_probe_close(void);

#endif
