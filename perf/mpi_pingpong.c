/*
 * mpi_pingpong: the MPI anchor for rmq_pingpong, as osu_latency measures
 * it.  Under mpirun -np 2, rank 0 MPI_Sends SIZE bytes to rank 1 and
 * MPI_Recvs them back, ITER times per size after WARMUP untimed round
 * trips; rank 1 echoes.  Whatever the MPI library picks underneath (with
 * Open MPI, --mca btl self,vader: shared memory) is what is measured.
 *
 * Conventions as rmq_pingpong (bench.h): one clock read per round trip,
 * scaled so that the mean is exactly the clock_gettime(CLOCK_MONOTONIC)
 * span of the whole timed loop / (2 * ITER); one-way latency = round trip
 * / 2; p50/p99 over the timed round trips; MB/s = size / mean one-way time
 * (1 MB = 10^6 bytes).  Each side receives into one buffer and sends from
 * another, as osu_latency and fi_pingpong do.  The output is rmq_pingpong's
 * table or CSV, so perf/compare.sh reads all of them alike.
 *
 * Placement is mpirun's business (--bind-to core, --cpu-set): no pinning
 * here.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bench.h"

#define PROG "mpi_pingpong"
#define TAG  1

struct opts {
	bool   csv;
	int    iters, warmup; /* 0 / -1: by size */
	size_t sizes[PP_MAX_SIZES];
	int    nsizes;
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: mpirun -np 2 " PROG " [-S SIZE[,SIZE...]|all] "
	        "[-I ITER] [-W WARMUP] [--csv]\n"
	        "       " PROG " --version | --help\n"
	        "MPI_Send/MPI_Recv ping-pong between ranks 0 (measures) and "
	        "1 (echoes).\n"
	        "  -S         sizes in bytes, k/m suffix allowed; all = 1 B .. "
	        "4 MiB, powers of two\n"
	        "             (default all)\n"
	        "  -I         timed round trips per size (default 100000 up to "
	        "4 KiB, 10000 up to\n"
	        "             64 KiB, 1000 above)\n"
	        "  -W         untimed warm-up round trips (default 1000, 100 "
	        "above 64 KiB)\n"
	        "  --csv      print size,lat_p50_us,lat_p99_us,mbps,path\n");
}

static int
parse_int(const char *s, int min, int *out)
{
	char *end;
	long  v;

	errno = 0;
	v     = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > INT32_MAX)
		return -1;
	*out = (int) v;
	return 0;
}

/* compare.sh's default -I, so that the anchor runs as long as its rows. */
static int
default_iters(size_t size)
{
	return size <= 4096 ? 100000 : size <= 65536 ? 10000 : 1000;
}

/* The first line of MPI_Get_library_version (Open MPI's runs on). */
static const char *
mpi_version(void)
{
	static char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int         len;

	/* One of the few calls allowed before MPI_Init: --version needs
	 * no mpirun. */
	MPI_Get_library_version(v, &len);
	v[strcspn(v, "\r\n")] = '\0';
	return v;
}

/*
 * One size, both ranks: the same counts on both sides, from the same
 * options, so no plan has to be exchanged.  Rank 0 fills lat[0..iters).
 * MPI's default error handler aborts the job, so there is nothing to check.
 */
static void
pingpong(int rank, size_t size, int iters, int warm, uint8_t *sb,
         uint8_t *rb, struct pp_stamps *st, double *lat)
{
	int n = (int) size, i;

	/* Neither rank's setup for this size is timed. */
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		for (i = 0; i < warm + iters; i++) {
			MPI_Recv(rb, n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
			MPI_Send(sb, n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
		}
		return;
	}
	for (i = 0; i < warm + iters; i++) {
		if (i == warm)
			pp_stamps_start(st);
		MPI_Send(sb, n, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
		MPI_Recv(rb, n, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
		         MPI_STATUS_IGNORE);
		if (i >= warm)
			pp_stamp(st, i - warm);
	}
	pp_stamps_finish(st, lat);
}

static int
run(const struct opts *o, int rank)
{
	struct pp_stamps st  = {0};
	uint8_t         *sb  = NULL, *rb = NULL;
	double          *lat = NULL;
	size_t           max = 1, size;
	int              k, iters, warm, ret = 1;

	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	sb = malloc(max);
	rb = malloc(max);
	if (sb == NULL || rb == NULL)
		goto out;
	pp_fill(sb, max, (uint64_t) rank);
	if (rank == 0) {
		printf("# " PROG ": %s, MPI_Send/MPI_Recv, rank 0 measures, "
		       "rank 1 echoes\n",
		       mpi_version());
		if (o->csv)
			printf(PP_CSV_HEADER "\n");
		else
			printf("# %10s %8s %10s %10s %10s %10s  %s\n", "size",
			       "iters", "p50_us", "p99_us", "avg_us", "MB/s",
			       "path");
		fflush(stdout);
	}
	for (k = 0; k < o->nsizes; k++) {
		size  = o->sizes[k];
		iters = o->iters > 0 ? o->iters : default_iters(size);
		warm  = o->warmup >= 0 ? o->warmup : size <= 65536 ? 1000 : 100;
		if (rank == 0) {
			free(lat);
			pp_stamps_free(&st);
			lat = malloc((size_t) iters * sizeof(*lat));
			if (lat == NULL || pp_stamps_init(&st, iters) != 0)
				goto out;
		}
		pingpong(rank, size, iters, warm, sb, rb, &st, lat);
		if (rank == 0) {
			pp_report(o->csv, size, lat, iters, "mpi");
			fflush(stdout);
		}
	}
	ret = 0;
out:
	if (ret != 0)
		fprintf(stderr, PROG " (rank %d): out of memory\n", rank);
	free(sb);
	free(rb);
	free(lat);
	pp_stamps_free(&st);
	return ret;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"csv", no_argument, NULL, 'c'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.iters = 0, .warmup = -1};
	int         c, rank, nranks, ret;

	/* Options before MPI_Init, so --version and --help need no mpirun;
	 * only the first rank (or a lone process) complains. */
	pp_mpi_rank(&rank, &nranks);
	if (rank > 0)
		opterr = 0;
	pp_parse_sizes("all", o.sizes, &o.nsizes);
	while ((c = getopt_long(argc, argv, "S:I:W:h", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (pp_parse_sizes(optarg, o.sizes, &o.nsizes) != 0)
				goto bad;
			break;
		case 'I':
			if (parse_int(optarg, 1, &o.iters) != 0)
				goto bad;
			break;
		case 'W':
			if (parse_int(optarg, 0, &o.warmup) != 0)
				goto bad;
			break;
		case 'c':
			o.csv = true;
			break;
		case 'V':
			printf(PROG " (%s)\n", mpi_version());
			return fflush(stdout) != 0 ? 1 : 0;
		case 'h':
			usage(stdout);
			return fflush(stdout) != 0 ? 1 : 0;
		default:
			goto usage;
		}
	}
	if (optind < argc)
		goto usage;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2) {
		if (rank == 0)
			fprintf(stderr, PROG ": run with exactly 2 ranks "
			                "(mpirun -np 2), not %d\n",
			        nranks);
		MPI_Finalize();
		return 2;
	}
	ret = run(&o, rank);
	if (ret != 0)
		MPI_Abort(MPI_COMM_WORLD, ret);
	MPI_Finalize();
	return ret;

bad:
	if (rank <= 0)
		fprintf(stderr, PROG ": bad -%c %s\n", c, optarg);
	return 2;
usage:
	if (rank <= 0)
		usage(stderr);
	return 2;
}
