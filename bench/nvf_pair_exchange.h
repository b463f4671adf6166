/*
 * nvf_pair_exchange.h: the benchmark's second gauge of the machine's state, for two-rank runs:
 * how long the two ranks take to read, at once, S bytes the other has just written.
 *
 * A two-rank allreduce of S bytes must bring to each rank S bytes that the other rank produced
 * (nvfabric's two-shot: half of the peer's input, which it has just copied into the segment, and
 * half of the result, which it has just reduced there), so this exchange is what its traffic
 * between the two CPUs costs at that moment, with nothing else: no reduction, no copy into the
 * receive buffer, no synchronisation per block. On this project's VMs it moves with the line
 * round trip: 1 MiB in 42-57 us in the fast state, 155-175 us in the slow one.
 */
#ifndef NVF_PAIR_EXCHANGE_H
#define NVF_PAIR_EXCHANGE_H

#include <mpi.h>
#include <stddef.h>

/* Collective over comm (a communicator without nvfabric). Returns 0 if the gauge works here
 * (comm has exactly two ranks, on one node, and the window of 2 x max_bytes could be made), -1
 * otherwise (then it measures nothing). */
int nvf_pair_exchange_open(MPI_Comm comm, size_t max_bytes);

/* Collective over the communicator given to open: `reps` exchanges of `bytes` (at most
 * max_bytes); returns the fastest one's time in microseconds on rank 0 (-1 elsewhere or without
 * the gauge). Each exchange: both ranks write fresh data into their half of a shared window,
 * meet, then read the other's half into a private buffer; timed from the meeting until both have
 * read. */
double nvf_pair_exchange_us(size_t bytes, int reps);

void nvf_pair_exchange_close(void);

#endif
