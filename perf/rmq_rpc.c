/*
 * rmq_rpc: the request rate of a DEALER with W requests in flight against a
 * ROUTER echo server, per message size and window (see rmq_rpc(1)).
 *
 * Roles as rmq_pingpong's (rmq_perf.h): the measuring side (mpirun rank 0,
 * --connect, or the parent under --local) is the client; the other side
 * the server.  Plans and acknowledgements travel on the control PAIR; the
 * requests on a DEALER (the client's, bound) and a ROUTER (the server's,
 * connected to it).  The server echoes every request to its sender: the
 * routing id frame it received, then the payload.
 *
 * A request is [u64 seq][u64 seq's slot][the slot's pattern]...: each of
 * the W slots has a payload of its own, and every reply is compared with
 * the request of its slot, byte for byte.  RPC/s = timed requests / wall
 * time; CPU ns per RPC on each side = that process's CPU time (every
 * thread) over the timed requests / their count; with W = 1, the round
 * trip of each request gives p50 and p99.
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

#define PLAN_MAGIC 0x43505252u /* "RRPC" */
#define CPU_MAGIC  0x55504352u /* the server's CPU report */
#define HDR        16          /* seq, slot */

struct opts {
	struct rmq_perf_role role;
	bool                 csv;
	int                  iters, warmup;
	size_t               sizes[PP_MAX_SIZES];
	int                  nsizes;
	int                  windows[PP_MAX_WINDOWS];
	int                  nwindows;
};

struct cpu_report {
	uint32_t magic;
	uint32_t pad;
	uint64_t ns;   /* CPU time over the timed requests */
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: rmq_rpc [-p shm|tcp|sockets|verbs|efa] "
	        "[-S SIZE[,SIZE...]] [-w W[,W...]] [-I ITER]\n"
	        "               [-W WARMUP] [--csv] "
	        "[--server [-B HOST] [-P PORT] | --connect HOST:PORT |\n"
	        "               --local [--cpus A,B]]\n"
	        "A DEALER keeps W requests in flight against a ROUTER that "
	        "echoes them;\n"
	        "defaults -S 64,4096 -w 1,64.  Under mpirun -np 2 no role "
	        "option is needed.\n");
}

/* Server, one size and window: echo each request to its sender. */
static int
serve_rounds(struct rmq_perf_side *side, const struct rmq_perf_plan *p,
             uint8_t *rbuf, uint8_t *sbuf)
{
	rmq_socket       *d = side->data;
	uint8_t           id[256];
	struct cpu_report cr = {CPU_MAGIC, 0, 0};
	uint64_t          i, cpu0 = 0;
	ssize_t           il = 0, n;

	(void) sbuf;
	for (i = 0; i < p->iters; i++) {
		if (i == p->warmup)
			cpu0 = pp_cpu_ns();
		il = rmq_recv(d, id, sizeof(id), 0);
		if (il < 0)
			return rmq_perf_die("recv", il);
		n = rmq_recv(d, rbuf, p->size, 0);
		if (n < 0 || (size_t) n != p->size)
			return rmq_perf_die("recv", n < 0 ? n : -EPROTO);
		n = rmq_send(d, id, (size_t) il, RMQ_SNDMORE);
		if (n >= 0)
			n = rmq_send(d, rbuf, p->size, 0);
		if (n < 0)
			return rmq_perf_die("send", n);
	}
	cr.ns = pp_cpu_ns() - cpu0;
	n = rmq_send(d, id, (size_t) il, RMQ_SNDMORE);
	if (n >= 0)
		n = rmq_send(d, &cr, sizeof(cr), 0);
	return n < 0 ? rmq_perf_die("send", n) : 0;
}

static int
serve(struct rmq_perf_side *side, void *arg)
{
	(void) arg;
	return rmq_perf_follow_side(side, PLAN_MAGIC, serve_rounds);
}

struct run {
	uint8_t *slot;   /* W payloads of size bytes */
	uint8_t *rb;
	double  *rtt;    /* W = 1: each timed round trip, us */
	uint64_t cpu, srv_cpu;
	double   secs;
};

/* Request seq into slot seq % W: its header, the slot's pattern after. */
static void
stamp(uint8_t *b, size_t size, uint64_t seq, uint64_t slot)
{
	if (size >= HDR) {
		memcpy(b, &seq, 8);
		memcpy(b + 8, &slot, 8);
	}
}

static int
one_run(rmq_socket *d, size_t size, int w, int warm, int iters,
        struct run *r)
{
	struct pp_stamps  st = {0};
	struct cpu_report cr;
	uint64_t          sent = 0, got = 0, total = (uint64_t) (warm + iters);
	uint64_t          seq, slot, cpu0 = 0;
	double            t0 = 0;
	ssize_t           n;
	int               k;

	for (k = 0; k < w; k++)
		pp_fill(r->slot + (size_t) k * size, size, (uint64_t) k * 31);
	if (w == 1 && pp_stamps_init(&st, iters) != 0)
		return rmq_perf_die("malloc", -ENOMEM);
	while (got < total) {
		while (sent < total && sent - got < (uint64_t) w) {
			slot = sent % (uint64_t) w;
			stamp(r->slot + slot * size, size, sent, slot);
			n = rmq_send(d, r->slot + slot * size, size, 0);
			if (n < 0)
				return rmq_perf_die("send", n);
			sent++;
		}
		n = rmq_recv(d, r->rb, size, 0);
		if (n < 0)
			return rmq_perf_die("recv", n);
		/* The reply is its slot's request, whole. */
		seq  = got;
		slot = got % (uint64_t) w;
		if (size >= HDR) {
			memcpy(&seq, r->rb, 8);
			memcpy(&slot, r->rb + 8, 8);
		}
		if ((size_t) n != size || slot >= (uint64_t) w ||
		    seq >= sent || seq % (uint64_t) w != slot ||
		    memcmp(r->rb, r->slot + slot * size, size) != 0) {
			fprintf(stderr, "rmq_rpc: %zu B, W %d: a wrong reply "
			        "(request %llu)\n", size, w,
			        (unsigned long long) got);
			return 1;
		}
		got++;
		if (got == (uint64_t) warm) {
			cpu0 = pp_cpu_ns();
			t0   = pp_now_us();
			if (w == 1)
				pp_stamps_start(&st);
		} else if (w == 1 && got > (uint64_t) warm) {
			pp_stamp(&st, (int) (got - (uint64_t) warm - 1));
		}
	}
	r->secs = (pp_now_us() - t0) / 1e6;
	r->cpu  = pp_cpu_ns() - cpu0;
	if (w == 1) {
		pp_stamps_finish(&st, r->rtt);
		for (k = 0; k < iters; k++)
			r->rtt[k] *= 2; /* round trips, not one-way */
		pp_stamps_free(&st);
	}
	/* The server's CPU over the same requests. */
	n = rmq_recv(d, &cr, sizeof(cr), 0);
	if (n != (ssize_t) sizeof(cr) || cr.magic != CPU_MAGIC)
		return rmq_perf_die("cpu report", n < 0 ? n : -EPROTO);
	r->srv_cpu = cr.ns;
	return 0;
}

static int
measure(struct rmq_perf_side *side, void *arg)
{
	const struct opts   *o = arg;
	struct rmq_perf_plan p = {.magic = PLAN_MAGIC, .path = o->role.path};
	struct run           r = {0};
	size_t               max = 0, size;
	char                 prov[64] = "";
	size_t               plen     = sizeof(prov);
	uint8_t             *probe    = NULL;
	double               p50, p99;
	int                  k, j, w, iters, warm, skip, ret = 1;
	ssize_t              rc;

	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	w = 1;
	for (j = 0; j < o->nwindows; j++)
		w = o->windows[j] > w ? o->windows[j] : w;
	r.slot = malloc(max * (size_t) w + 1);
	r.rb   = malloc(max + 1);
	probe  = malloc(max + sizeof(p));
	if (r.slot == NULL || r.rb == NULL || probe == NULL)
		goto out;
	rmq_getopt(side->data, RMQ_PROVIDER_NAME, prov, &plen);
	if (o->csv)
		printf("size,window,rpcs,rpc_per_s,client_cpu_ns,"
		       "server_cpu_ns,rtt_p50_us,rtt_p99_us\n");
	else
		printf("# rmq_rpc %s: provider %s, DEALER -> ROUTER echo, %s\n"
		       "# %8s %6s %9s %12s %10s %10s %10s %10s\n",
		       rmq_version(), prov, side->what, "size", "window",
		       "rpcs", "rpc/s", "cli_ns", "srv_ns", "rtt_p50", "rtt_p99");
	fflush(stdout);
	for (k = 0; k < o->nsizes; k++) {
		size = o->sizes[k];
		for (j = 0; j < o->nwindows; j++) {
			w     = o->windows[j];
			iters = o->iters > 0 ? o->iters
			                     : (w == 1 ? 20000 : 200000);
			warm  = o->warmup >= 0 ? o->warmup : iters / 10;
			p.cmd    = RMQ_PERF_CMD_SIZE;
			p.size   = size;
			p.iters  = (uint64_t) (iters + warm);
			p.warmup = (uint32_t) warm;
			p.reply  = 0;
			p.window = (uint32_t) w;
			rc = rmq_perf_plan_send(side->s, &p, probe, 0, &skip);
			if (rc < 0) {
				rmq_perf_die("plan", rc);
				goto out;
			}
			if (skip != 0)
				continue;
			free(r.rtt);
			r.rtt = w == 1 ? malloc((size_t) iters * sizeof(double))
			               : NULL;
			if (w == 1 && r.rtt == NULL)
				goto out;
			if (one_run(side->data, size, w, warm, iters, &r) != 0)
				goto out;
			p50 = p99 = 0;
			if (w == 1) {
				qsort(r.rtt, (size_t) iters, sizeof(double),
				      pp_cmp_double);
				p50 = r.rtt[iters / 2];
				p99 = r.rtt[(size_t) ((double) iters * 0.99)];
			}
			if (o->csv)
				printf("%zu,%d,%d,%.0f,%.0f,%.0f,%.3f,%.3f\n",
				       size, w, iters, iters / r.secs,
				       (double) r.cpu / iters,
				       (double) r.srv_cpu / iters, p50, p99);
			else if (w == 1)
				printf("  %8zu %6d %9d %12.0f %10.0f %10.0f "
				       "%10.2f %10.2f\n", size, w, iters,
				       iters / r.secs, (double) r.cpu / iters,
				       (double) r.srv_cpu / iters, p50, p99);
			else
				printf("  %8zu %6d %9d %12.0f %10.0f %10.0f "
				       "%10s %10s\n", size, w, iters,
				       iters / r.secs, (double) r.cpu / iters,
				       (double) r.srv_cpu / iters, "-", "-");
			fflush(stdout);
		}
	}
	p.cmd   = RMQ_PERF_CMD_DONE;
	p.size  = p.iters = p.reply = 0;
	rc      = rmq_perf_plan_send(side->s, &p, probe, 0, &skip);
	ret     = rc < 0 ? rmq_perf_die("done", rc) : 0;
out:
	free(r.slot);
	free(r.rb);
	free(r.rtt);
	free(probe);
	return ret;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    RMQ_PERF_ROLE_LONGOPTS,
	    {"csv", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.role   = {.prov      = "shm",
	                            .host      = "127.0.0.1",
	                            .port      = -1,
	                            .salt      = 0x525043u,
	                            .path      = RMQ_PERF_PATH_UNSET,
	                            .data      = true,
	                            .data_type = {RMQ_DEALER, RMQ_ROUTER},
	                            .cpus      = {0, 1}},
	                 .iters  = 0,
	                 .warmup = -1};
	int         c, rc;

	rmq_perf_prog = "rmq_rpc";
	pp_parse_sizes("64,4096", o.sizes, &o.nsizes);
	pp_parse_windows("1,64", o.windows, &o.nwindows);
	while ((c = getopt_long(argc, argv, "p:S:w:I:W:B:P:h", lo, NULL)) !=
	       -1) {
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
				fprintf(stderr, "rmq_rpc: bad -S %s\n", optarg);
				return 2;
			}
			break;
		case 'w':
			if (pp_parse_windows(optarg, o.windows,
			                     &o.nwindows) != 0) {
				fprintf(stderr, "rmq_rpc: bad -w %s\n", optarg);
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
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o.iters < 0 || o.warmup < -1) {
		usage(stderr);
		return 2;
	}
	rc = rmq_perf_run(&o.role, measure, serve, &o);
	if (rc == 2)
		usage(stderr);
	return rc;
}
