/*
 * copy_floor: the floor under the local path's ring for one message -- two
 * processes ping-pong SIZE bytes through shared memory with two copies per
 * hop (the sender's buffer into a ring, the ring into the receiver's
 * buffer), a flag word each way, no messaging library at all.
 *
 * Each hop writes fresh lines into the ring at the next position (it
 * cycles through 512 KiB, as librmq's default local ring), so the
 * receiver's copy pulls lines the other core just wrote: what a ring
 * costs, unlike a benchmark that reads the same unchanged source buffer
 * every time (process_vm_readv from a buffer nobody writes, as
 * fi_pingpong's and MPI's single-copy transports do in a ping-pong).
 * Mean one-way time = round trip / 2 over ITERS round trips, after ITERS/10
 * untimed ones; one line per run, --runs separate pairs of processes
 * (each run forks anew: where the two processes land decides what a
 * line costs to move between them, and that can change from run to run).
 *
 * --copies also times each copy of the timing side (into the ring, and
 * out of it once the other side's flag is seen), mean us per message:
 * which of the two a placement makes slow.  The clock reads add to the
 * one-way time, so it is a separate run.
 *
 * usage: copy_floor [-S SIZES] [--cpus A,B] [-I ITERS] [--runs N] [--copies]
 *                   [--csv]
 */
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define RING      (512u * 1024u)
#define HDR       24u /* librmq's record prefix and header */

struct shared {
	_Alignas(64) _Atomic uint64_t ping;
	_Alignas(64) _Atomic uint64_t pong;
	_Alignas(64) uint8_t ring[2][RING]; /* one per direction */
};

/* The next record's offset in a ring, as librmq's: 8-byte aligned, and
 * back to the start where it would not fit before the end. */
static size_t
next_at(size_t *pos, size_t n)
{
	size_t off = *pos % RING, rec = (HDR + n + 7) & ~(size_t) 7;

	if (RING - off < rec) {
		*pos += RING - off;
		off = 0;
	}
	*pos += rec;
	return off + HDR;
}

/* One hop of the echo side: take message i, send it back. */
static void
echo(struct shared *sh, size_t n, uint64_t total, int cpu)
{
	uint8_t *buf = malloc(n);
	size_t   in = 0, out = 0, at;
	uint64_t i;

	(void) pp_pin(cpu);
	if (buf == NULL)
		_exit(1);
	for (i = 1; i <= total; i++) {
		while (atomic_load_explicit(&sh->ping, memory_order_acquire) != i)
			;
		at = next_at(&in, n);
		memcpy(buf, sh->ring[0] + at, n);
		at = next_at(&out, n);
		memcpy(sh->ring[1] + at, buf, n);
		atomic_store_explicit(&sh->pong, i, memory_order_release);
	}
	_exit(0);
}

/* One run: fork the echo side, time iters round trips; -1 on error.
 * copies: the mean us of each copy into cin and cout, else NULL. */
static double
one_run(size_t n, uint64_t iters, const int cpus[2], double *cin,
        double *cout)
{
	struct shared *sh;
	uint8_t       *buf = malloc(n);
	uint64_t       warm = iters / 10, i;
	size_t         in = 0, out = 0, at;
	double         t0 = 0, t, tin = 0, tout = 0;
	pid_t          kid;
	int            st;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || buf == NULL)
		return -1;
	memset(sh, 0, sizeof(*sh));
	memset(buf, 0x5a, n);
	kid = fork();
	if (kid < 0)
		return -1;
	if (kid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		echo(sh, n, warm + iters, cpus[1]);
	}
	(void) pp_pin(cpus[0]);
	for (i = 1; i <= warm + iters; i++) {
		if (i == warm + 1)
			t0 = pp_now_us();
		at = next_at(&out, n);
		t = cin != NULL ? pp_now_us() : 0;
		memcpy(sh->ring[0] + at, buf, n);
		if (cin != NULL && i > warm)
			tin += pp_now_us() - t;
		buf[i % n]++; /* a new message each time */
		atomic_store_explicit(&sh->ping, i, memory_order_release);
		while (atomic_load_explicit(&sh->pong, memory_order_acquire) != i)
			;
		at = next_at(&in, n);
		t = cout != NULL ? pp_now_us() : 0;
		memcpy(buf, sh->ring[1] + at, n);
		if (cout != NULL && i > warm)
			tout += pp_now_us() - t;
	}
	t0 = (pp_now_us() - t0) / (double) iters / 2;
	if (cin != NULL) {
		*cin  = tin / (double) iters;
		*cout = tout / (double) iters;
	}
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		t0 = -1;
	munmap(sh, sizeof(*sh));
	free(buf);
	return t0;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"cpus", required_argument, NULL, 'c'},
	    {"runs", required_argument, NULL, 'r'},
	    {"csv", no_argument, NULL, 'v'},
	    {"copies", no_argument, NULL, 'C'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	size_t   sizes[PP_MAX_SIZES] = {65536};
	int      nsizes = 1, cpus[2] = {0, 1}, runs = 1, c, k, r;
	long     iters = 0;
	bool     csv = false, copies = false;
	double   us, cin = 0, cout = 0;

	while ((c = getopt_long(argc, argv, "S:I:h", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (pp_parse_sizes(optarg, sizes, &nsizes) != 0)
				nsizes = 0;
			for (k = 0; k < nsizes && sizes[k] > 0 &&
			            sizes[k] <= RING / 2;
			     k++)
				;
			if (nsizes == 0 || k < nsizes) {
				fprintf(stderr, "copy_floor: bad -S %s (1 B to "
				        "256 KiB)\n", optarg);
				return 2;
			}
			break;
		case 'I':
			iters = atol(optarg);
			if (iters <= 0) {
				fprintf(stderr, "copy_floor: bad -I %s\n", optarg);
				return 2;
			}
			break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &cpus[0], &cpus[1]) != 2) {
				fprintf(stderr, "copy_floor: bad --cpus %s\n",
				        optarg);
				return 2;
			}
			break;
		case 'r':
			runs = atoi(optarg);
			if (runs <= 0) {
				fprintf(stderr, "copy_floor: bad --runs %s\n",
				        optarg);
				return 2;
			}
			break;
		case 'v':
			csv = true;
			break;
		case 'C':
			copies = true;
			break;
		default:
			fprintf(c == 'h' ? stdout : stderr,
			        "usage: copy_floor [-S SIZES] [--cpus A,B] "
			        "[-I ITERS] [--runs N] [--copies] [--csv]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (csv)
		printf(copies ? "size,run,oneway_us,copy_in_us,copy_out_us\n"
		              : "size,run,oneway_us\n");
	else
		printf("# copy_floor: two copies per hop through a shared "
		       "ring, CPUs %d and %d; mean one-way us\n", cpus[0],
		       cpus[1]);
	for (k = 0; k < nsizes; k++)
		for (r = 0; r < runs; r++) {
			us = one_run(sizes[k], iters > 0 ? (uint64_t) iters
			             : sizes[k] > 16384 ? 20000 : 100000, cpus,
			             copies ? &cin : NULL, copies ? &cout : NULL);
			if (us < 0) {
				fprintf(stderr, "copy_floor: run failed\n");
				return 1;
			}
			if (copies)
				printf(csv ? "%zu,%d,%.3f,%.3f,%.3f\n"
				           : "  %8zu  run %d  %8.3f  in %8.3f  "
				             "out %8.3f\n",
				       sizes[k], r + 1, us, cin, cout);
			else
				printf(csv ? "%zu,%d,%.3f\n"
				           : "  %8zu  run %d  %8.3f\n",
				       sizes[k], r + 1, us);
			fflush(stdout);
		}
	return 0;
}
