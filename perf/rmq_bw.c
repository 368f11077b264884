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
 * --pattern picks the sockets the messages travel on: pair (default) sends
 * them and the acks on one PAIR; pushpull sends them from a PUSH to a PULL
 * and pubsub from a PUB (RMQ_NODROP=1: it waits instead of dropping) to a
 * SUB subscribed to everything, and as neither PULL nor SUB can send, the
 * plans and acks go on a second pair of sockets, a PAIR (rmq_perf.h).
 *
 * Each side also reads its process CPU clock (CLOCK_PROCESS_CPUTIME_ID,
 * every thread) over the timed rounds: the receiving side from the start of
 * the first timed round to its last ack, which carries the figure back; the
 * sending side from its first timed send to that ack.  Per message: CPU ns
 * / (window * iters).  A busy-polling side counts its spinning too.
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
/* The old columns first, so readers of the first four still work. */
#define BW_CSV_HEADER                                                        \
	"size,mbps,msgs_per_s,path,pattern,snd_cpu_ns,rcv_cpu_ns,dropped"
#define MEMCPY_CSV_HEADER "size,mbps,msgs_per_s,path"
#define ACK_SIZE          8
/* The last ack of a size: round, receiver's CPU ns over the timed rounds. */
#define LAST_ACK_SIZE 16
/* ms a receiving PULL or SUB waits for a message before it says so. */
#define DATA_TIMEOUT 60000

/* --pattern: the data sockets (sending side, receiving side). */
static const struct pattern {
	const char *name;
	bool        data; /* a second pair for the messages */
	int         type[2];
} patterns[] = {
    {"pair", false, {RMQ_PAIR, RMQ_PAIR}},
    {"pushpull", true, {RMQ_PUSH, RMQ_PULL}},
    {"pubsub", true, {RMQ_PUB, RMQ_SUB}},
};

/* --memcpy: seconds per size, and the largest pool (per direction). */
#define MEMCPY_SECONDS 0.25
#define MEMCPY_POOL_MAX ((size_t) 1 << 30)

struct opts {
	struct rmq_perf_role role;
	const struct pattern *pattern;
	const struct pattern *pattern2; /* --pattern A,B: B too, alternated */
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
	        "              [--pattern pair|pushpull|pubsub|pushpull,pubsub]\n"
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
	        "sends).\n"
	        "--pattern: the messages go PAIR -> PAIR (default), PUSH -> "
	        "PULL or PUB -> SUB\n"
	        "(no drop, subscribed to everything); for the last two the "
	        "plans and acks go on\n"
	        "a second pair, a PAIR, and the sending side binds the data "
	        "socket on an\n"
	        "ephemeral port of -B HOST (127.0.0.1), also with --connect.  "
	        "snd/rcv ns: each\n"
	        "side's process CPU time over the timed rounds / messages.\n"
	        "--pattern pushpull,pubsub opens both data pairs and "
	        "alternates their windows\n"
	        "(one row each): the host's placement phases, longer than a "
	        "window, fall on both alike.\n"
	        "--memcpy "
	        "measures one core's memcpy() bandwidth instead, through "
	        "buffers\n"
	        "larger than the last-level cache, pinned to the first of --cpus (with "
	        "--csv: a memcpy\n"
	        "row, then a memcpy_hot row of the same 2 buffers every time, "
	        "per size).\n");
}

/* One size's figures, as the sending side has them at the end. */
struct result {
	size_t      size;
	int         iters;
	double      us;      /* first timed send .. last ack */
	uint64_t    snd_cpu; /* ns, this process */
	uint64_t    rcv_cpu; /* ns, as the last ack says */
	uint64_t    dropped; /* rmq_stats().dropped of the data socket */
	const char *path;
};

static void
report(const struct opts *o, const struct pattern *pat,
       const struct result *r)
{
	double msgs = (double) r->iters * o->window;
	double mbps = r->us > 0 ? (double) r->size * msgs / r->us : 0;
	double mps  = r->us > 0 ? msgs * 1e6 / r->us : 0;
	double snd  = (double) r->snd_cpu / msgs;
	double rcv  = (double) r->rcv_cpu / msgs;

	if (o->csv)
		printf("%zu,%.2f,%.0f,%s,%s,%.1f,%.1f,%llu\n", r->size, mbps,
		       mps, r->path, pat->name, snd, rcv,
		       (unsigned long long) r->dropped);
	else
		printf("  %10zu %6d %6d %12.2f %12.0f %9.1f %9.1f  %s%s%s%s\n",
		       r->size, r->iters, o->window, mbps, mps, snd, rcv,
		       r->path, r->dropped != 0 ? " (DROPPED)" : "",
		       o->pattern2 != NULL ? " " : "",
		       o->pattern2 != NULL ? pat->name : "");
	fflush(stdout);
}

static void
report_skip(const struct opts *o, const struct pattern *pat, size_t size,
            int iters, const char *path)
{
	if (o->csv)
		printf("%zu,-,-,%s,%s,-,-,-\n", size, path, pat->name);
	else
		printf("  %10zu %6d %6d %12s %12s %9s %9s  %s (cannot carry)\n",
		       size, iters, o->window, "-", "-", "-", "-", path);
	fflush(stdout);
}

/*
 * Receiving side, one size: a window per round, then the ack, on the
 * control socket; the last ack carries the CPU time of the timed rounds.
 */
static int
receive_rounds(struct rmq_perf_side *side, const struct rmq_perf_plan *p,
               uint8_t *rbuf, uint8_t *sbuf)
{
	rmq_socket *ds[2] = {side->data != NULL ? side->data : side->s,
	                     side->data2};
	rmq_socket *d;
	uint64_t    ack[2], i, j, cpu0 = pp_cpu_ns(), cpu[2] = {0, 0}, c0 = 0;
	size_t      len;
	ssize_t     rc;
	int         cur = -1, k, nd = side->data2 != NULL ? 2 : 1;
	size_t      plen;

	(void) sbuf;
	/* The plan set the control socket's path; the data sockets too. */
	for (k = 0; k < nd && side->data != NULL; k++) {
		plen = sizeof(cur);
		if (p->path == RMQ_PERF_PATH_UNSET ||
		    (rmq_getopt(ds[k], RMQ_PATH, &cur, &plen) == 0 &&
		     cur == p->path))
			continue;
		cur = p->path;
		rc  = rmq_setopt(ds[k], RMQ_PATH, &cur, sizeof(cur));
		if (rc != 0)
			return rmq_perf_die("--path on the data socket", rc);
	}
	for (i = 0; i < p->iters * (uint64_t) nd; i++) {
		/* Two data pairs: their windows alternate, each timed on its
		 * own (this side's CPU per window, summed). */
		k = (int) (i % (uint64_t) nd);
		d = ds[k];
		if (i == p->warmup * (uint64_t) nd)
			cpu0 = pp_cpu_ns();
		if (nd > 1)
			c0 = pp_cpu_ns();
		for (j = 0; j < p->window; j++) {
			rc = rmq_recv(d, rbuf, p->size, 0);
			if (rc == -RMQ_EAGAIN && side->data != NULL) {
				fprintf(stderr, "rmq_bw: %llu B: round %llu: "
				        "nothing for %d s after %llu of %u "
				        "messages\n",
				        (unsigned long long) p->size,
				        (unsigned long long) (i / (uint64_t) nd),
				        DATA_TIMEOUT / 1000,
				        (unsigned long long) j, p->window);
				return 1;
			}
			if (rc < 0 || (size_t) rc != p->size)
				return rmq_perf_die("recv",
				                    rc < 0 ? rc : -EPROTO);
		}
		ack[0] = i / (uint64_t) nd;
		len    = ACK_SIZE;
		if (nd > 1 && i >= p->warmup * (uint64_t) nd)
			cpu[k] += pp_cpu_ns() - c0;
		if (i / (uint64_t) nd + 1 == p->iters) {
			ack[1] = nd > 1 ? cpu[k] : pp_cpu_ns() - cpu0;
			len    = LAST_ACK_SIZE;
		}
		rc = rmq_send(side->s, ack, len, 0);
		if (rc < 0)
			return rmq_perf_die("send ack", rc);
	}
	return 0;
}

static int
receiver(struct rmq_perf_side *side, void *arg)
{
	int tmo = DATA_TIMEOUT;

	(void) arg;
	/* A PULL or SUB that waits for ever would hide a lost message. */
	if (side->data != NULL)
		rmq_setopt(side->data, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	return rmq_perf_follow_side(side, PLAN_MAGIC, receive_rounds);
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
	struct rmq_stats     st0[2], st1[2];
	struct result        res[2];
	rmq_socket          *s  = side->s;
	rmq_socket          *d  = side->data != NULL ? side->data : side->s;
	rmq_socket          *ds[2] = {d, side->data2};
	const struct pattern *pats[2] = {o->pattern, o->pattern2};
	uint8_t             *sb = NULL;
	uint64_t             ack[2], cpu0 = 0, cw = 0;
	double               t0 = 0, tw = 0;
	size_t               max = sizeof(p), size;
	ssize_t              rc;
	char                 prov[64] = "";
	size_t               plen     = sizeof(prov);
	const char          *forced   = rmq_perf_path_label(o->role.path);
	char                 how[128];
	int                  k, i, j, m, iters, warm, skip, ret = 1;
	int                  nd = side->data2 != NULL ? 2 : 1;

	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	sb = aligned_alloc(4096, (max + 4095) & ~(size_t) 4095);
	if (sb == NULL)
		goto out;
	rmq_getopt(d, RMQ_PROVIDER_NAME, prov, &plen);
	if (side->data2 != NULL)
		snprintf(how, sizeof(how), "%s -> %s and %s -> %s, their "
		         "windows alternating, acks on a PAIR",
		         rmq_perf_type_name(o->pattern->type[0]),
		         rmq_perf_type_name(o->pattern->type[1]),
		         rmq_perf_type_name(o->pattern2->type[0]),
		         rmq_perf_type_name(o->pattern2->type[1]));
	else if (side->data != NULL)
		snprintf(how, sizeof(how), "%s -> %s, acks on a PAIR",
		         rmq_perf_type_name(o->pattern->type[0]),
		         rmq_perf_type_name(o->pattern->type[1]));
	else
		snprintf(how, sizeof(how), "PAIR");
	if (o->csv)
		printf(BW_CSV_HEADER "\n");
	else
		printf("# rmq_bw %s: provider %s, %s, path %s, pattern %s%s%s "
		       "(%s)\n"
		       "# MB/s = size * window * iters / time (1 MB = 10^6 B), "
		       "one %d B ack per window\n"
		       "# snd/rcv ns = process CPU time of that side over the "
		       "timed rounds / messages\n"
		       "# %10s %6s %6s %12s %12s %9s %9s  %s\n",
		       rmq_version(), prov, side->what,
		       o->role.path == RMQ_PERF_PATH_UNSET ? "by size" : forced,
		       o->pattern->name, o->pattern2 != NULL ? "," : "",
		       o->pattern2 != NULL ? o->pattern2->name : "", how,
		       ACK_SIZE, "size", "iters",
		       "window", "MB/s", "msgs/s", "snd ns", "rcv ns", "path");
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
			p.cmd    = RMQ_PERF_CMD_SIZE;
			p.size   = size;
			p.iters  = (uint64_t) (iters + warm);
			p.warmup = (uint32_t) warm;
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
			for (m = 0; m < nd; m++)
				report_skip(o, pats[m], size, iters, forced);
			continue;
		}
		pp_fill(sb, size, (uint64_t) k);
		memset(res, 0, sizeof(res));
		for (i = 0; i < warm + iters; i++) {
			for (m = 0; m < nd; m++) {
				d = ds[m];
				if (i == warm && m == 0) {
					for (j = 0; j < nd; j++)
						rmq_stats(ds[j], &st0[j]);
					t0   = pp_now_us();
					cpu0 = pp_cpu_ns();
				}
				if (nd > 1 && i >= warm) {
					tw = pp_now_us();
					cw = pp_cpu_ns();
				}
				for (j = 0; j < o->window; j++) {
					rc = rmq_send(d, sb, size, 0);
					if (rc < 0) {
						rmq_perf_die("send", rc);
						goto out;
					}
				}
				/* The data socket progresses while the ack
				 * comes. */
				rc = side->data != NULL
				         ? rmq_perf_wait_in(s, d, -1)
				         : 0;
				if (rc >= 0)
					rc = rmq_recv(s, ack, sizeof(ack), 0);
				if (rc < 0) {
					rmq_perf_die("recv ack", rc);
					goto out;
				}
				if (rc != (i + 1 == warm + iters
				               ? LAST_ACK_SIZE
				               : ACK_SIZE) ||
				    ack[0] != (uint64_t) i) {
					fprintf(stderr,
					        "rmq_bw: %zu B: bad ack\n",
					        size);
					goto out;
				}
				if (nd > 1 && i >= warm) {
					res[m].us += pp_now_us() - tw;
					res[m].snd_cpu += pp_cpu_ns() - cw;
				}
				if (i + 1 == warm + iters)
					res[m].rcv_cpu = ack[1];
			}
		}
		if (nd == 1) {
			res[0].us      = pp_now_us() - t0;
			res[0].snd_cpu = pp_cpu_ns() - cpu0;
		}
		for (m = 0; m < nd; m++) {
			rmq_stats(ds[m], &st1[m]);
			res[m].size    = size;
			res[m].iters   = iters;
			res[m].dropped = st1[m].dropped - st0[m].dropped;
			res[m].path    = rmq_path_name(
			    rmq_perf_main_path(&st0[m], &st1[m]));
			if (res[m].dropped != 0)
				fprintf(stderr,
				        "rmq_bw: %zu B: the %s dropped %llu "
				        "messages (rmq_stats), with "
				        "RMQ_NODROP=1\n",
				        size,
				        rmq_perf_type_name(pats[m]->type[0]),
				        (unsigned long long) res[m].dropped);
			report(o, pats[m], &res[m]);
		}
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
		printf(MEMCPY_CSV_HEADER "\n");
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

static const struct pattern *
find_pattern(const char *name, size_t len)
{
	size_t t;

	for (t = 0; t < sizeof(patterns) / sizeof(patterns[0]); t++)
		if (strlen(patterns[t].name) == len &&
		    strncmp(name, patterns[t].name, len) == 0)
			return &patterns[t];
	return NULL;
}

/* --pattern P, or A,B: two data pairs whose windows alternate (neither a
 * PAIR: that one carries the plans and acks). */
static int
parse_patterns(const char *arg, struct opts *o)
{
	const char *comma = strchr(arg, ',');

	o->pattern  = find_pattern(arg, comma != NULL ? (size_t) (comma - arg)
	                                              : strlen(arg));
	o->pattern2 = comma != NULL ? find_pattern(comma + 1,
	                                           strlen(comma + 1))
	                            : NULL;
	if (o->pattern == NULL || (comma != NULL && o->pattern2 == NULL)) {
		fprintf(stderr, "rmq_bw: bad --pattern %s (pair, pushpull, "
		        "pubsub, or two of pushpull and pubsub: A,B)\n", arg);
		return -1;
	}
	if (o->pattern2 != NULL &&
	    (!o->pattern->data || !o->pattern2->data ||
	     o->pattern == o->pattern2)) {
		fprintf(stderr, "rmq_bw: --pattern %s: alternating takes two "
		        "different patterns of pushpull and pubsub\n", arg);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    RMQ_PERF_ROLE_LONGOPTS,
	    {"csv", no_argument, NULL, 'v'},
	    {"warmup", required_argument, NULL, 'w'},
	    {"memcpy", no_argument, NULL, 'm'},
	    {"pattern", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.pattern = &patterns[0],
	                 .role   = {.prov = "shm",
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
		case 't':
			if (parse_patterns(optarg, &o) != 0)
				return 2;
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
	o.role.data         = o.pattern->data;
	o.role.data_type[0] = o.pattern->type[0];
	o.role.data_type[1] = o.pattern->type[1];
	if (o.pattern2 != NULL) {
		o.role.data2         = true;
		o.role.data2_type[0] = o.pattern2->type[0];
		o.role.data2_type[1] = o.pattern2->type[1];
	}
	rc = rmq_perf_run(&o.role, sender, receiver, &o);
	if (rc == 2)
		usage(stderr);
	return rc;
}
