/*
 * rmq_bw: streaming bandwidth between two processes, per message size, with
 * the path librmq took (as osu_bw and fabtests' fi_bw count it).
 *
 * Per size the sending side sends a window of W messages back to back, the
 * receiving side takes them all and answers with one 8-byte ack; that round
 * is repeated I times after a few untimed ones.  MB/s = size * W * I / time
 * (1 MB = 10^6 bytes), msgs/s = W * I / time, time from the first timed
 * send to the last ack.  The ack keeps the sender from running ahead of
 * what the receiver has really taken, which a one-way stream without it
 * would count.
 *
 * Roles as rmq_pingpong: the sending side measures and sends the plans;
 * under mpirun rank 0 binds and sends, rank 1 connects and receives;
 * --server receives, --connect sends; --local forks both, pinned.
 *
 * --memcpy measures no messaging at all: the bandwidth of memcpy() on one
 * core, per size, with source and destination rotating through buffers
 * larger than the last-level cache.  That is the ceiling one copying core
 * can reach and the denominator of "shm bandwidth / memcpy bandwidth".
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "rmq.h"
#include "rmq_perf.h"

#define PLAN_MAGIC    0x57424d52u /* "RMBW" */
#define BW_CSV_HEADER "size,mbps,msgs_per_s,path"
#define ACK_SIZE      8

/* --memcpy: seconds per size, and the largest pool (per direction). */
#define MEMCPY_SECONDS 0.25
#define MEMCPY_POOL_MAX ((size_t) 1 << 30)

struct opts {
	struct rmq_perf_role role;
	bool                 csv, memcpy_only;
	int                  iters, warmup, window;
	size_t               sizes[PP_MAX_SIZES];
	int                  nsizes;
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: rmq_bw [-p shm|tcp|sockets|verbs|efa] "
	        "[-S SIZE[,SIZE...]|all] [-I ITER] [-W WINDOW]\n"
	        "              [--warmup N] [--csv] [--rndv read|send|write|seg]"
	        "\n"
	        "              [--path auto|inject|eager|ring|rndv_read|"
	        "rndv_write|rndv_send|seg]\n"
	        "              [--server [-B HOST] [-P PORT] | "
	        "--connect HOST:PORT | --local [--cpus A,B]]\n"
	        "       rmq_bw --memcpy [-S SIZES] [--cpus A,B] [--csv]\n"
	        "Each round sends WINDOW messages (default 64) and waits for "
	        "one ack; ITER rounds\n"
	        "(default 100 up to 64 KiB, 20 above) after --warmup rounds "
	        "(10, 2).  Under\n"
	        "mpirun -np 2 no role option is needed (rank 0 binds and "
	        "sends).  --memcpy\n"
	        "measures one core's memcpy() bandwidth instead, through "
	        "buffers larger than\n"
	        "the last-level cache, pinned to the first of --cpus (with "
	        "--csv: a memcpy\n"
	        "row, then a memcpy_hot row of the same 2 buffers every time, "
	        "per size).\n");
}

static void
report(const struct opts *o, size_t size, int iters, double us,
       const char *path)
{
	double msgs = (double) iters * o->window;
	double mbps = us > 0 ? (double) size * msgs / us : 0;
	double mps  = us > 0 ? msgs * 1e6 / us : 0;

	if (o->csv)
		printf("%zu,%.2f,%.0f,%s\n", size, mbps, mps, path);
	else
		printf("  %10zu %6d %6d %12.2f %12.0f  %s\n", size, iters,
		       o->window, mbps, mps, path);
	fflush(stdout);
}

static void
report_skip(const struct opts *o, size_t size, int iters, const char *path)
{
	if (o->csv)
		printf("%zu,-,-,%s\n", size, path);
	else
		printf("  %10zu %6d %6d %12s %12s  %s (cannot carry)\n", size,
		       iters, o->window, "-", "-", path);
	fflush(stdout);
}

/* Receiving side, one size: a window per round, then the ack. */
static int
receive_rounds(rmq_socket *s, const struct rmq_perf_plan *p, uint8_t *rbuf,
               uint8_t *sbuf)
{
	uint64_t i, j;
	ssize_t  rc;

	(void) sbuf;
	for (i = 0; i < p->iters; i++) {
		for (j = 0; j < p->window; j++) {
			rc = rmq_recv(s, rbuf, p->size, 0);
			if (rc < 0 || (size_t) rc != p->size)
				return rmq_perf_die("recv",
				                    rc < 0 ? rc : -EPROTO);
		}
		rc = rmq_send(s, &i, ACK_SIZE, 0);
		if (rc < 0)
			return rmq_perf_die("send ack", rc);
	}
	return 0;
}

static int
receiver(struct rmq_perf_side *side, void *arg)
{
	(void) arg;
	return rmq_perf_follow(side->s, PLAN_MAGIC, receive_rounds);
}

/* Sending side: one window per round, then the ack; time the rounds. */
static int
sender(struct rmq_perf_side *side, void *arg)
{
	const struct opts   *o = arg;
	struct rmq_perf_plan p = {.magic  = PLAN_MAGIC,
	                          .window = (uint32_t) o->window,
	                          .reply  = ACK_SIZE,
	                          .path   = o->role.path};
	struct rmq_stats     st0, st1;
	rmq_socket          *s  = side->s;
	uint8_t             *sb = NULL;
	uint64_t             ack;
	double               t0 = 0;
	size_t               max = sizeof(p), size;
	ssize_t              rc;
	char                 prov[64] = "";
	size_t               plen     = sizeof(prov);
	const char          *forced   = rmq_perf_path_label(o->role.path);
	int                  k, i, j, iters, warm, skip, ret = 1;

	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	sb = malloc(max);
	if (sb == NULL)
		goto out;
	rmq_getopt(s, RMQ_PROVIDER_NAME, prov, &plen);
	if (o->csv)
		printf(BW_CSV_HEADER "\n");
	else
		printf("# rmq_bw %s: provider %s, %s, path %s\n"
		       "# MB/s = size * window * iters / time (1 MB = 10^6 B), "
		       "one %d B ack per window\n"
		       "# %10s %6s %6s %12s %12s  %s\n",
		       rmq_version(), prov, side->what,
		       o->role.path == RMQ_PERF_PATH_UNSET ? "by size" : forced,
		       ACK_SIZE, "size", "iters", "window", "MB/s", "msgs/s",
		       "path");
	if (side->path_err != 0)
		fprintf(stderr, "rmq_bw: --path %s: %s; every size skipped\n",
		        forced, rmq_strerror(side->path_err));
	fflush(stdout);
	for (k = 0; k < o->nsizes; k++) {
		size  = o->sizes[k];
		iters = o->iters > 0 ? o->iters : size <= 65536 ? 100 : 20;
		warm  = o->warmup >= 0 ? o->warmup : size <= 65536 ? 10 : 2;
		skip  = side->path_err;
		if (skip == 0) {
			p.cmd   = RMQ_PERF_CMD_SIZE;
			p.size  = size;
			p.iters = (uint64_t) (iters + warm);
			rc      = rmq_perf_plan_send(s, &p, sb, size, &skip);
			if (rc < 0) {
				rmq_perf_die("plan", rc);
				goto out;
			}
		}
		if (skip != 0) {
			if (side->path_err == 0)
				fprintf(stderr, "rmq_bw: %zu B: path %s: %s; "
				        "skipped\n", size, forced,
				        rmq_strerror(skip));
			report_skip(o, size, iters, forced);
			continue;
		}
		pp_fill(sb, size, (uint64_t) k);
		for (i = 0; i < warm + iters; i++) {
			if (i == warm) {
				rmq_stats(s, &st0);
				t0 = pp_now_us();
			}
			for (j = 0; j < o->window; j++) {
				rc = rmq_send(s, sb, size, 0);
				if (rc < 0) {
					rmq_perf_die("send", rc);
					goto out;
				}
			}
			rc = rmq_recv(s, &ack, sizeof(ack), 0);
			if (rc < 0) {
				rmq_perf_die("recv ack", rc);
				goto out;
			}
			if (rc != ACK_SIZE || ack != (uint64_t) i) {
				fprintf(stderr, "rmq_bw: %zu B: bad ack\n",
				        size);
				goto out;
			}
		}
		rmq_stats(s, &st1);
		report(o, size, iters, pp_now_us() - t0,
		       rmq_path_name(rmq_perf_main_path(&st0, &st1)));
	}
	p.cmd   = RMQ_PERF_CMD_DONE;
	p.size  = 0;
	p.iters = 0;
	p.reply = 0;
	p.path  = RMQ_PERF_PATH_UNSET;
	rc      = rmq_perf_plan_send(s, &p, sb, 0, &skip);
	ret     = rc < 0 ? rmq_perf_die("done", rc) : 0;
out:
	free(sb);
	return ret;
}

/* The last-level cache as the C library reports it; 0 if it does not. */
static size_t
llc_bytes(void)
{
	long v = sysconf(_SC_LEVEL3_CACHE_SIZE);

	if (v <= 0)
		v = sysconf(_SC_LEVEL2_CACHE_SIZE);
	return v > 0 ? (size_t) v : 0;
}

/*
 * One core's memcpy() bandwidth per size.  A benchmark that copied the same
 * two buffers again and again would measure the cache, not what a large
 * message costs: source and destination each walk a pool twice the LLC
 * (at least 4 copies of the largest size), one size-sized step (rounded up
 * to a cache line) per copy, so every copy reads and writes lines that
 * were evicted since they were last touched.  The pools are written once
 * first, so page faults are not timed.
 */
static int
memcpy_bw(const struct opts *o)
{
	volatile uint8_t sink = 0;
	uint8_t         *src = NULL, *dst = NULL;
	size_t           llc = llc_bytes(), pool, max = 64, size, step, n, at;
	double           t0, t, us, hot_us;
	uint64_t         copies, hot;
	int              i, k, ret = 1;

	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	pool = 2 * (llc > 0 ? llc : (size_t) 32 << 20);
	if (pool < 4 * max)
		pool = 4 * max;
	if (pool > MEMCPY_POOL_MAX)
		pool = MEMCPY_POOL_MAX > max ? MEMCPY_POOL_MAX : max;
	src = aligned_alloc(4096, (pool + 4095) & ~(size_t) 4095);
	dst = aligned_alloc(4096, (pool + 4095) & ~(size_t) 4095);
	if (src == NULL || dst == NULL) {
		rmq_perf_die("malloc", -ENOMEM);
		goto out;
	}
	rmq_perf_pin(o->role.cpus[0]);
	pp_fill(src, pool, 1);
	memset(dst, 0, pool);
	if (o->csv)
		printf(BW_CSV_HEADER "\n");
	else
		printf("# rmq_bw --memcpy: memcpy() on one core (CPU %d), "
		       "%.2f s per size\n"
		       "# source and destination each rotate through a %zu MiB "
		       "pool (LLC %zu MiB%s;\n"
		       "# pool = 2 x LLC, at least 4 x the largest size, at "
		       "most 1 GiB),\n"
		       "# one size-sized step (rounded up to 64 B) per copy: "
		       "copies miss the cache\n"
		       "# MB/s = bytes copied / time (1 MB = 10^6 B); hot MB/s "
		       "= the same 2 buffers every time\n"
		       "# %10s %12s %12s %12s  %s\n",
		       o->role.cpus[0], MEMCPY_SECONDS, pool >> 20, llc >> 20,
		       llc > 0 ? " as sysconf reports it" : " unknown: 32 assumed",
		       "size", "MB/s", "copies/s", "hot MB/s", "what");
	fflush(stdout);
	for (k = 0; k < o->nsizes; k++) {
		size = o->sizes[k];
		step = (size + 63) & ~(size_t) 63;
		n    = pool / step;
		copies = hot = 0;
		at     = 0;
		t0     = pp_now_us();
		/* Look at the clock every 64 copies: it costs more than a
		 * small copy. */
		do {
			for (i = 0; i < 64; i++) {
				memcpy(dst + at * step, src + at * step, size);
				at = at + 1 < n ? at + 1 : 0;
			}
			copies += 64;
			t = pp_now_us();
		} while (t - t0 < MEMCPY_SECONDS * 1e6);
		us = t - t0;
		sink ^= dst[(at ? at - 1 : n - 1) * step];
		/* The cache-hot figure, for contrast only. */
		t0 = pp_now_us();
		do {
			for (i = 0; i < 64; i++)
				memcpy(dst, src, size);
			hot += 64;
			t = pp_now_us();
		} while (t - t0 < MEMCPY_SECONDS * 1e6 / 2);
		hot_us = t - t0;
		sink ^= dst[0];
		if (o->csv)
			printf("%zu,%.2f,%.0f,memcpy\n"
			       "%zu,%.2f,%.0f,memcpy_hot\n",
			       size, (double) size * (double) copies / us,
			       (double) copies * 1e6 / us, size,
			       (double) size * (double) hot / hot_us,
			       (double) hot * 1e6 / hot_us);
		else
			printf("  %10zu %12.2f %12.0f %12.2f  memcpy\n", size,
			       (double) size * (double) copies / us,
			       (double) copies * 1e6 / us,
			       (double) size * (double) hot / hot_us);
		fflush(stdout);
	}
	(void) sink;
	ret = 0;
out:
	free(src);
	free(dst);
	return ret;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    RMQ_PERF_ROLE_LONGOPTS,
	    {"csv", no_argument, NULL, 'v'},
	    {"warmup", required_argument, NULL, 'w'},
	    {"memcpy", no_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.role   = {.prov = "shm",
	                            .host = "127.0.0.1",
	                            .port = -1,
	                            .salt = 0x6277, /* "bw" */
	                            .path = RMQ_PERF_PATH_UNSET,
	                            .cpus = {0, 1}},
	                 .iters  = 0,
	                 .warmup = -1,
	                 .window = 64};
	int         c, rc;

	rmq_perf_prog = "rmq_bw";
	pp_parse_sizes("all", o.sizes, &o.nsizes);
	while ((c = getopt_long(argc, argv, "p:S:I:W:B:P:h", lo, NULL)) != -1) {
		rc = rmq_perf_role_opt(&o.role, c, optarg);
		if (rc < 0) {
			usage(stderr);
			return 2;
		}
		if (rc > 0)
			continue;
		switch (c) {
		case 'S':
			if (pp_parse_sizes(optarg, o.sizes, &o.nsizes) != 0) {
				fprintf(stderr, "rmq_bw: bad -S %s\n", optarg);
				return 2;
			}
			break;
		case 'I':
			o.iters = atoi(optarg);
			break;
		case 'W':
			o.window = atoi(optarg);
			if (o.window < 1) {
				fprintf(stderr, "rmq_bw: bad -W %s\n", optarg);
				return 2;
			}
			break;
		case 'w':
			o.warmup = atoi(optarg);
			break;
		case 'v':
			o.csv = o.role.quiet = true;
			break;
		case 'm':
			o.memcpy_only = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o.memcpy_only)
		return memcpy_bw(&o);
	rc = rmq_perf_run(&o.role, sender, receiver, &o);
	if (rc == 2)
		usage(stderr);
	return rc;
}
