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
 *
 * --rmq PROV: librmq in the same two processes, alternated with MPI.  The
 * ranks open a PAIR over PROV (rank 0 binds, MPI carries the endpoint to
 * rank 1; two ranks on one host take librmq's local path unless
 * RMQ_LOCAL=0), and each size's round trips go in BLOCKS blocks per
 * library, MPI's and librmq's in turn (ABBA: MPI first in even blocks),
 * so the host's scheduling phases, which on a virtual machine outlast a
 * block and set a run's figures twofold, fall on both alike.  Then a row
 * per library (path mpi, and the path librmq took), and a comment with
 * librmq's mean over MPI's, block pair by block pair: median [min-max].
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
#include "rmq.h"
#include "rmq_perf.h"

#define PROG "mpi_pingpong"
#define TAG  1

struct opts {
	bool        csv;
	int         iters, warmup; /* 0 / -1: by size */
	const char *rmq;    /* --rmq PROV, or NULL */
	int         blocks; /* -B: per size and library, with --rmq */
	size_t sizes[PP_MAX_SIZES];
	int    nsizes;
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: mpirun -np 2 " PROG " [-S SIZE[,SIZE...]|all] "
	        "[-I ITER] [-W WARMUP] [--csv]\n"
	        "       mpirun -np 2 " PROG " --rmq shm|tcp|... [-B BLOCKS] "
	        "[-S ...] [-I ITER] [-W WARMUP] [--csv]\n"
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
	        "  --csv      print size,lat_p50_us,lat_p99_us,mbps,path\n"
	        "  --rmq      also librmq (a PAIR over that provider) between "
	        "the same ranks,\n"
	        "             alternated with MPI in blocks; a row each, and "
	        "librmq / MPI\n"
	        "  -B         blocks per size and library with --rmq (default "
	        "20)\n");
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

/* n round trips of size bytes over MPI; rank 0 stamps each (st). */
static void
mpi_rounds(int rank, size_t size, int n, uint8_t *sb, uint8_t *rb,
           struct pp_stamps *st)
{
	int m = (int) size, i;

	for (i = 0; i < n; i++) {
		if (rank == 0) {
			MPI_Send(sb, m, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
			MPI_Recv(rb, m, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(rb, m, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
			MPI_Send(sb, m, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
		}
		if (st != NULL)
			pp_stamp(st, i);
	}
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
	/* Neither rank's setup for this size is timed. */
	MPI_Barrier(MPI_COMM_WORLD);
	mpi_rounds(rank, size, warm, sb, rb, NULL);
	if (rank == 0)
		pp_stamps_start(st);
	mpi_rounds(rank, size, iters, sb, rb, rank == 0 ? st : NULL);
	if (rank == 0)
		pp_stamps_finish(st, lat);
}

/* ---- --rmq: librmq beside MPI in the same two processes ---- */

static void
rmq_die(int rank, const char *what, long rc)
{
	fprintf(stderr, PROG " (rank %d): librmq: %s: %s\n", rank, what,
	        rmq_strerror((int) rc));
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* A PAIR between the ranks: rank 0 binds on 127.0.0.1 (both ranks on one
 * host), MPI carries its endpoint to rank 1, which connects. */
static rmq_socket *
rmq_pair_open(const char *prov, int rank, rmq_ctx **ctx)
{
	char        ep[256] = "";
	size_t      len     = sizeof(ep);
	rmq_socket *s       = NULL;
	int         rc, linger = 5000;

	rc = rmq_ctx_new(ctx, NULL);
	if (rc == 0)
		rc = rmq_socket_open(*ctx, RMQ_PAIR, &s);
	if (rc == 0)
		rc = rmq_setopt(s, RMQ_LINGER, &linger, sizeof(linger));
	if (rank == 0) {
		snprintf(ep, sizeof(ep), "%s://127.0.0.1:0", prov);
		if (rc == 0)
			rc = rmq_bind(s, ep);
		if (rc == 0)
			rc = rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len);
		if (rc != 0)
			ep[0] = '\0'; /* tells rank 1 there is none */
	}
	MPI_Bcast(ep, (int) sizeof(ep), MPI_CHAR, 0, MPI_COMM_WORLD);
	ep[sizeof(ep) - 1] = '\0';
	if (rank == 1 && rc == 0)
		rc = ep[0] == '\0' ? -RMQ_EINVAL : rmq_connect(s, ep);
	if (rc != 0)
		rmq_die(rank, rank == 0 ? "bind" : "connect", rc);
	return s;
}

/* n round trips of size bytes over librmq; rank 0 stamps each (st). */
static void
rmq_rounds(rmq_socket *s, int rank, size_t size, int n, uint8_t *sb,
           uint8_t *rb, struct pp_stamps *st)
{
	ssize_t rc = 0;
	int     i;

	for (i = 0; i < n; i++) {
		if (rank == 0) {
			rc = rmq_send(s, sb, size, 0);
			if (rc >= 0)
				rc = rmq_recv(s, rb, size, 0);
		} else {
			rc = rmq_recv(s, rb, size, 0);
			if (rc >= 0 && (size_t) rc != size)
				rmq_die(rank, "ping-pong: a short message",
				        -RMQ_EPROTO);
			if (rc >= 0)
				rc = rmq_send(s, sb, size, 0);
		}
		if (rc < 0)
			rmq_die(rank, "ping-pong", rc);
		if (rank == 0 && (size_t) rc != size)
			rmq_die(rank, "ping-pong: a short message", -RMQ_EPROTO);
		if (st != NULL)
			pp_stamp(st, i);
	}
}

/*
 * One size, both ranks, --rmq: blocks of per round trips, MPI's and
 * librmq's in turn (ABBA).  Rank 0 fills lat[0] (MPI) and lat[1] (librmq),
 * blocks * per each, and ratio[0..blocks) with librmq's block mean over
 * MPI's of the same pair.
 */
static void
alternate(rmq_socket *s, int rank, size_t size, int blocks, int per, int warm,
          uint8_t *sb, uint8_t *rb, struct pp_stamps *st, double *lat[2],
          double *ratio)
{
	double mean[2], sum;
	int    b, j, lib, i;

	MPI_Barrier(MPI_COMM_WORLD);
	mpi_rounds(rank, size, warm, sb, rb, NULL);
	rmq_rounds(s, rank, size, warm, sb, rb, NULL);
	for (b = 0; b < blocks; b++) {
		for (j = 0; j < 2; j++) {
			lib = (b & 1) != 0 ? 1 - j : j;
			if (rank == 0)
				pp_stamps_start(st);
			if (lib == 0)
				mpi_rounds(rank, size, per, sb, rb,
				           rank == 0 ? st : NULL);
			else
				rmq_rounds(s, rank, size, per, sb, rb,
				           rank == 0 ? st : NULL);
			if (rank != 0)
				continue;
			pp_stamps_finish(st, lat[lib] + (size_t) b * per);
			for (sum = 0, i = 0; i < per; i++)
				sum += lat[lib][(size_t) b * per + i];
			mean[lib] = sum / per;
		}
		if (rank == 0)
			ratio[b] = mean[0] > 0 ? mean[1] / mean[0] : 0;
	}
}

/* Rank 0, --rmq: both rows and the ratio line. */
static void
alternate_report(const struct opts *o, rmq_socket *s, size_t size,
                 const struct rmq_stats *st0, double *lat[2], int n,
                 double *ratio, int blocks)
{
	struct rmq_stats st1;
	double           sum[2] = {0, 0};
	const char      *path   = "rmq";
	int              i, k;

	if (rmq_stats(s, &st1) == 0 &&
	    (k = rmq_perf_main_path(st0, &st1)) >= 0)
		path = rmq_path_name(k);
	for (i = 0; i < n; i++) {
		sum[0] += lat[0][i];
		sum[1] += lat[1][i];
	}
	pp_report(o->csv, size, lat[0], n, "mpi");
	pp_report(o->csv, size, lat[1], n, path);
	qsort(ratio, (size_t) blocks, sizeof(*ratio), pp_cmp_double);
	printf("# %zu B: librmq / MPI, mean one-way: %.3f over all; per block "
	       "pair median %.3f [%.3f-%.3f], %d pairs of %d round trips\n",
	       size, sum[0] > 0 ? sum[1] / sum[0] : 0, ratio[blocks / 2],
	       ratio[0], ratio[blocks - 1], blocks, n / blocks);
}

static int
run(const struct opts *o, int rank)
{
	struct pp_stamps st  = {0};
	struct rmq_stats rs0;
	uint8_t         *sb  = NULL, *rb = NULL;
	double          *lat = NULL, *lat2[2] = {NULL, NULL}, *ratio = NULL;
	size_t           max = 1, size;
	rmq_ctx         *ctx = NULL;
	rmq_socket      *s   = NULL;
	int              k, iters, warm, blocks = 0, per = 0, ret = 1;

	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	sb = malloc(max);
	rb = malloc(max);
	if (sb == NULL || rb == NULL)
		goto out;
	pp_fill(sb, max, (uint64_t) rank);
	if (o->rmq != NULL)
		s = rmq_pair_open(o->rmq, rank, &ctx);
	if (rank == 0) {
		printf("# " PROG ": %s, MPI_Send/MPI_Recv, rank 0 measures, "
		       "rank 1 echoes\n",
		       mpi_version());
		if (o->rmq != NULL)
			printf("# and librmq %s, a PAIR over %s, alternated "
			       "with MPI in %d blocks per size (ABBA)\n",
			       rmq_version(), o->rmq, o->blocks);
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
		if (o->rmq != NULL) {
			blocks = o->blocks < iters ? o->blocks : iters;
			per    = iters / blocks;
			iters  = blocks * per;
		}
		if (rank == 0) {
			free(lat);
			free(lat2[0]);
			free(lat2[1]);
			free(ratio);
			lat2[0] = lat2[1] = ratio = NULL;
			pp_stamps_free(&st);
			lat = malloc((size_t) iters * sizeof(*lat));
			if (lat == NULL ||
			    pp_stamps_init(&st, o->rmq != NULL ? per : iters) != 0)
				goto out;
			if (o->rmq != NULL) {
				lat2[0] = lat;
				lat     = NULL;
				lat2[1] = malloc((size_t) iters * sizeof(double));
				ratio   = malloc((size_t) blocks * sizeof(double));
				if (lat2[1] == NULL || ratio == NULL)
					goto out;
			}
		}
		if (o->rmq == NULL) {
			pingpong(rank, size, iters, warm, sb, rb, &st, lat);
			if (rank == 0)
				pp_report(o->csv, size, lat, iters, "mpi");
		} else {
			if (rank == 0 && rmq_stats(s, &rs0) != 0)
				memset(&rs0, 0, sizeof(rs0));
			alternate(s, rank, size, blocks, per, warm, sb, rb, &st,
			          lat2, ratio);
			if (rank == 0)
				alternate_report(o, s, size, &rs0, lat2, iters,
				                 ratio, blocks);
		}
		if (rank == 0)
			fflush(stdout);
	}
	ret = 0;
out:
	if (ret != 0)
		fprintf(stderr, PROG " (rank %d): out of memory\n", rank);
	if (s != NULL)
		rmq_close(s);
	if (ctx != NULL)
		rmq_ctx_destroy(ctx);
	free(sb);
	free(rb);
	free(lat);
	free(lat2[0]);
	free(lat2[1]);
	free(ratio);
	pp_stamps_free(&st);
	return ret;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"csv", no_argument, NULL, 'c'},
	    {"rmq", required_argument, NULL, 'r'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.iters = 0, .warmup = -1, .blocks = 20};
	int         c, rank, nranks, ret;

	/* Options before MPI_Init, so --version and --help need no mpirun;
	 * only the first rank (or a lone process) complains. */
	pp_mpi_rank(&rank, &nranks);
	if (rank > 0)
		opterr = 0;
	pp_parse_sizes("all", o.sizes, &o.nsizes);
	while ((c = getopt_long(argc, argv, "S:I:W:B:h", lo, NULL)) != -1) {
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
		case 'r':
			o.rmq = optarg;
			break;
		case 'B':
			if (parse_int(optarg, 1, &o.blocks) != 0)
				goto bad;
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
