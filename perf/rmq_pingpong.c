/*
 * rmq_pingpong: one-way latency and bandwidth between two processes, per
 * message size, with the path librmq took (see rmq_pingpong(1)).
 *
 * Roles: the "measuring" side sends a plan (size, iterations) and then pings;
 * the "echo" side follows the plan and pongs, so only the measuring side
 * needs -S/-I.  Under mpirun rank 0 binds and measures, rank 1 connects and
 * echoes; standalone --server echoes and --connect measures; --local forks
 * both, pinned to two CPUs.
 *
 * --path forces one path (RMQ_PATH) on both sockets: each side sets it
 * after bind/connect, and the plan carries it, so an echo side started
 * without the flag (--server) follows.  Each plan is padded to the size
 * it announces and acked with a pong-sized message, so a size the forced
 * path cannot carry either way is skipped (rmq_perf.h) and printed as '-'.
 *
 * one-way latency = round trip / 2 for each iteration; p50/p99 over the
 * timed iterations; MB/s = size / mean one-way time (1 MB = 10^6 bytes),
 * as fi_pingpong and osu_latency count.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "rmq.h"
#include "rmq_perf.h"

#define PLAN_MAGIC 0x52504d50u /* "PMPR" */
#define CMD_CHECK  0x100       /* with SIZE: echo every ping's own bytes */

struct opts {
	struct rmq_perf_role role;
	bool                 csv, check;
	int                  iters, warmup;
	size_t               sizes[PP_MAX_SIZES];
	int                  nsizes;
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: rmq_pingpong [-p shm|tcp|sockets|verbs|efa] "
	        "[-S SIZE[,SIZE...]|all] [-I ITER]\n"
	        "                    [-W WARMUP] [--csv] [--reqrep] "
	        "[--check] [--rndv read|send|write|seg]\n"
	        "                    [--path auto|inject|eager|ring|rndv_read|"
	        "rndv_write|rndv_send|seg]\n"
	        "                    [--server [-B HOST] [-P PORT] | "
	        "--connect HOST:PORT | --local [--cpus A,B]]\n"
	        "Under mpirun -np 2 no role option is needed (rank 0 binds "
	        "and measures).\n"
	        "--path forces RMQ_PATH on both sides (the echo side takes it "
	        "from the plan too);\n"
	        "sizes the path cannot carry are skipped: '-' in the table "
	        "and the CSV.\n");
}

static bool
verify(const uint8_t *b, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != (uint8_t) (seed + i * 7))
			return false;
	return true;
}

/*
 * Echo side, one size: pong every ping.  Like fi_pingpong and osu_latency
 * it receives into one buffer and sends from another, so each direction
 * reads a source the CPU has not just dirtied.
 */
static int
echo_rounds(rmq_socket *s, const struct rmq_perf_plan *p, uint8_t *rbuf,
            uint8_t *sbuf)
{
	uint64_t i;
	ssize_t  rc;

	for (i = 0; i < p->iters; i++) {
		rc = rmq_recv(s, rbuf, p->size, 0);
		if (rc < 0 || (size_t) rc != p->size)
			return rmq_perf_die("recv", rc < 0 ? rc : -EPROTO);
		/* The pong carries the ping's bytes: every time when
		 * checking, else once per size (the anchor's way). */
		if (i == 0 || (p->cmd & CMD_CHECK))
			memcpy(sbuf, rbuf, p->size);
		rc = rmq_send(s, sbuf, p->size, 0);
		if (rc < 0)
			return rmq_perf_die("send", rc);
	}
	return 0;
}

static int
echo(struct rmq_perf_side *side, void *arg)
{
	(void) arg;
	return rmq_perf_follow(side->s, PLAN_MAGIC, echo_rounds);
}

static int
measure(struct rmq_perf_side *side, void *arg)
{
	const struct opts   *o = arg;
	struct rmq_perf_plan p = {.magic  = PLAN_MAGIC,
	                          .window = 1,
	                          .path   = o->role.path};
	struct rmq_stats     st0, st1;
	rmq_socket          *s  = side->s;
	uint8_t             *sb = NULL, *rb = NULL;
	double              *lat = NULL;
	struct pp_stamps     st  = {0};
	size_t               max = sizeof(p), size;
	ssize_t              rc;
	char                 prov[64] = "";
	size_t               plen     = sizeof(prov);
	char                 dom[64]  = "";
	size_t               dlen     = sizeof(dom);
	const char          *forced   = rmq_perf_path_label(o->role.path);
	int                  k, i, iters, warm, skip, ret = 1;

	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	sb = malloc(max);
	rb = malloc(max);
	if (sb == NULL || rb == NULL)
		goto out;
	rmq_getopt(s, RMQ_PROVIDER_NAME, prov, &plen);
	rmq_getopt(s, RMQ_DOMAIN_NAME, dom, &dlen);
	if (o->csv)
		printf(PP_CSV_HEADER "\n");
	else
		printf("# rmq_pingpong %s: provider %s (domain %s), pattern %s, "
		       "%s, path %s\n"
		       "# %10s %8s %10s %10s %10s %10s  %s\n",
		       rmq_version(), prov, dom,
		       o->role.reqrep ? "req/rep" : "pair",
		       side->what,
		       o->role.path == RMQ_PERF_PATH_UNSET ? "by size" : forced,
		       "size", "iters", "p50_us", "p99_us", "avg_us", "MB/s",
		       "path");
	if (side->path_err != 0)
		fprintf(stderr, "rmq_pingpong: --path %s: %s; every size "
		        "skipped\n", forced, rmq_strerror(side->path_err));
	fflush(stdout);
	for (k = 0; k < o->nsizes; k++) {
		size  = o->sizes[k];
		iters = o->iters > 0 ? o->iters : size <= 65536 ? 10000 : 1000;
		warm  = o->warmup >= 0 ? o->warmup
		                      : (iters / 10 > 10 ? iters / 10 : 10);
		skip  = side->path_err;
		if (skip == 0) {
			p.cmd   = RMQ_PERF_CMD_SIZE | (o->check ? CMD_CHECK : 0);
			p.size  = size;
			p.iters = (uint64_t) (iters + warm);
			p.reply = size;
			rc = rmq_perf_plan_send(s, &p, sb, size, &skip);
			if (rc < 0) {
				rmq_perf_die("plan", rc);
				goto out;
			}
		}
		if (skip != 0) {
			if (side->path_err == 0)
				fprintf(stderr, "rmq_pingpong: %zu B: path %s: "
				        "%s; skipped\n", size, forced,
				        rmq_strerror(skip));
			pp_report_skip(o->csv, size, iters, forced);
			fflush(stdout);
			continue;
		}
		free(lat);
		lat = malloc((size_t) iters * sizeof(*lat));
		if (lat == NULL)
			goto out;
		/* After the plan: the probe wrote over the start of sb. */
		pp_fill(sb, size, (uint64_t) k);
		pp_stamps_free(&st);
		if (pp_stamps_init(&st, iters) != 0)
			goto out;
		for (i = 0; i < warm + iters; i++) {
			if (i == warm) {
				rmq_stats(s, &st0);
				pp_stamps_start(&st);
			}
			rc = rmq_send(s, sb, size, 0);
			if (rc >= 0)
				rc = rmq_recv(s, rb, size, 0);
			if (rc < 0) {
				rmq_perf_die("ping", rc);
				goto out;
			}
			if (i >= warm)
				pp_stamp(&st, i - warm);
			if ((size_t) rc != size ||
			    (o->check && !verify(rb, size, (uint64_t) k))) {
				fprintf(stderr,
				        "rmq_pingpong: %zu B: corrupt echo\n",
				        size);
				goto out;
			}
		}
		pp_stamps_finish(&st, lat);
		rmq_stats(s, &st1);
		pp_report(o->csv, size, lat, iters,
		          rmq_path_name(rmq_perf_main_path(&st0, &st1)));
		if (!o->csv && st1.sent_in_place > st0.sent_in_place)
			printf("# %zu B: %llu of %d sends in place "
			       "(thresholds.in_place)\n", size,
			       (unsigned long long) (st1.sent_in_place -
			                             st0.sent_in_place),
			       iters);
		fflush(stdout);
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
	free(rb);
	free(lat);
	pp_stamps_free(&st);
	return ret;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    RMQ_PERF_ROLE_LONGOPTS,
	    {"csv", no_argument, NULL, 'v'},
	    {"reqrep", no_argument, NULL, 'r'},
	    {"check", no_argument, NULL, 'k'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.role   = {.prov = "shm",
	                            .host = "127.0.0.1",
	                            .port = -1,
	                            .path = RMQ_PERF_PATH_UNSET,
	                            .cpus = {0, 1}},
	                 .iters  = 0,
	                 .warmup = -1};
	int         c, rc;

	rmq_perf_prog = "rmq_pingpong";
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
				fprintf(stderr, "rmq_pingpong: bad -S %s\n",
				        optarg);
				return 2;
			}
			break;
		case 'I':
			o.iters = atoi(optarg);
			break;
		case 'W':
			o.warmup = atoi(optarg);
			break;
		case 'v':
			o.csv = o.role.quiet = true;
			break;
		case 'r':
			o.role.reqrep = true;
			break;
		case 'k':
			o.check = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	rc = rmq_perf_run(&o.role, measure, echo, &o);
	if (rc == 2)
		usage(stderr);
	return rc;
}
