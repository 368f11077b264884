/*
 * rmq_fanout: one publisher, N subscribers.  How the rate of a PUB socket
 * and its CPU cost per message change with the number of subscribers, in
 * push mode (RMQ_FANOUT_LOG 0: the publisher sends each subscriber its
 * copy) and log mode (RMQ_FANOUT_LOG 1: the publisher writes each message
 * once into its registered log, every subscriber reads it with fi_read;
 * rmq_pubsub(7)).  A provider that cannot read remotely has no log: its
 * log rows say n/a.
 *
 * One run, for one mode and one N:
 *
 *   1. the publisher opens a PUB (RMQ_NODROP = 1: it waits at a
 *      subscriber's high-water mark, nothing is dropped), binds it on an ephemeral port and tells subscribers
 *      1..N the endpoint over their control PAIR;
 *   2. each opens a SUB, subscribes to everything, connects -- a SUB that
 *      subscribed before it connects has its filter in place at the
 *      publisher when rmq_connect returns, so no slow joiner -- and says
 *      READY;
 *   3. warm-up: the publisher sends W messages, each subscriber says WARM
 *      once it has them all;
 *   4. timed: the publisher sends M messages back to back and waits for
 *      every subscriber's DONE (sent when it has all M).
 *
 * msgs/s = M / (first timed send .. last DONE); copies/s = N * msgs/s.  The
 * publisher's CPU ns per message is its process CPU time
 * (CLOCK_PROCESS_CPUTIME_ID, every thread) over the send loop and the wait,
 * / M; the subscribers' is the mean of theirs over their receive loop, / M.
 * Each message carries its sequence number (sizes >= 8 B), and every
 * subscriber checks it gets all of them, in order, once.
 *
 * --drop keeps RMQ_NODROP = 0: the publisher never waits, and a copy a
 * subscriber has no room for is dropped and counted (rmq_stats().dropped,
 * once per subscriber that missed it).  On fewer CPUs than N + 1
 * processes a RMQ_NODROP publisher's CPU time is mostly waiting for
 * starved subscribers; without it, it is the publisher's own fan-out
 * work, which log mode means to keep flat as N grows.  Then a phase ends
 * with END on the control PAIR, giving the index after its last message:
 * a subscriber receives until it has that last one or, after END, no
 * message came for 200 ms (warm-up) or 500 ms (timed), and checks the
 * indices only grow (a gap is a drop; a repeat or a step back is bad).
 * After each phase the publisher polls its PUB until its drop count held
 * still for 200 ms: a log
 * subscriber's misses are counted when its cursor report comes in.
 * msgs/s = M / the send loop, the publisher's rate; pub ns = its CPU over
 * the send loop / M; copies/s = the timed messages the subscribers got /
 * (first timed send .. last DONE), and got + dropped must be N * M.
 *
 * While it waits on its control sockets the publisher polls its PUB with
 * them (rmq_poll with no events on it): with progress.mode inline a socket
 * only moves while its owner calls into it, and a bound PUB must answer
 * handshakes and, in log mode on a provider without one-sided hardware
 * (tcp;ofi_rxm), serve its subscribers' reads.
 *
 * Log mode turns the local path off (RMQ_LOCAL=0) in the processes --local
 * forks: subscribers on the publisher's host are pushed to through their
 * rings, never on the log.
 *
 * Launch: --local forks, per run, the publisher (pinned to the first CPU
 * this process may use) and N subscribers (round-robin on the others, or
 * on that one CPU if there is no other); under mpirun -np N+1 rank 0
 * publishes and ranks 1..N subscribe, N from the world size, and runs
 * with fewer subscribers leave the others idle.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "rmq.h"
#include "rmq_perf.h"

#define PROG       "rmq_fanout"
#define CTL_MAGIC  0x4e414652u /* "RFAN" */
#define MAX_SUBS   64
#define MAX_NS     64
#define LINGER_MS  5000
#define FAN_CSV_HEADER                                                       \
	"mode,n,size,msgs,msgs_per_s,copies_per_s,mbps,pub_cpu_ns,"          \
	"sub_cpu_ns,rate_vs_n1,cpu_vs_n1,dropped"

#define QUIET_WARM_MS  200 /* --drop: after END, no message this long: */
#define QUIET_TIMED_MS 500 /* the rest were dropped for this subscriber */
#define SETTLE_MS      200 /* --drop: the PUB takes in cursor reports, */
#define SETTLE_MAX_MS  3000 /* until its drop count holds still */

enum { CMD_RUN = 1, CMD_QUIT = 2, CMD_END = 3 };
enum { REP_READY = 1, REP_WARM = 2, REP_DONE = 3 };

/* The modes: a name and its RMQ_FANOUT_LOG (0: push; 1: all read the
 * log from the first subscriber on). */
static const struct mode {
	const char *name;
	int         fanout;
} modes[] = {
    {"push", 0},
    {"log", 1},
};
#define NMODES ((int) (sizeof(modes) / sizeof(modes[0])))

/* Publisher -> subscriber, on the control PAIR. */
struct fan_cmd {
	uint32_t magic;
	uint32_t cmd;    /* CMD_* */
	uint64_t size;   /* bytes per message */
	uint64_t warmup; /* untimed messages first */
	uint64_t msgs;   /* timed messages */
	uint64_t end;    /* CMD_END: the index after the phase's last */
	char     ep[224]; /* the PUB's endpoint */
};

/* Subscriber -> publisher, one per phase. */
struct fan_rep {
	uint32_t magic;
	uint32_t what;      /* REP_* */
	int32_t  err;       /* 0, or why the phase failed (negative) */
	uint32_t spare;
	uint64_t got;       /* messages received in the phase */
	uint64_t bad;       /* of them, not the sequence number expected
	                     * (--drop: a repeat or a step back) */
	uint64_t first_bad; /* the number expected at the first bad one
	                     * (--drop: the least that would do) */
	uint64_t cpu_ns;    /* REP_DONE: CPU time of the timed phase */
};

/* One run's figures: publisher -> whoever prints (a pipe with --local). */
struct fan_res {
	int32_t  mode; /* index into modes[] */
	int32_t  n;
	int32_t  ok;      /* 1 measured, 0 failed, -1 skipped (no log mode) */
	double   us;         /* first timed send .. last DONE */
	double   rate_us;    /* msgs/s is over: us, or --drop the send loop */
	uint64_t got;        /* timed messages the subscribers received */
	uint64_t pub_cpu_ns; /* publisher, send loop + wait (--drop: the
	                      * send loop) */
	uint64_t sub_cpu_ns; /* summed over the subscribers */
	uint64_t dropped;    /* rmq_stats().dropped of the PUB */
	char     prov[64];
};

struct opts {
	const char *prov, *host;
	int         port; /* -1: derived from the job id */
	bool        local, csv, ns_given;
	bool        drop; /* PUB with RMQ_NODROP = 0 */
	size_t      size;
	uint64_t    msgs;
	int64_t     warmup; /* -1: M / 10, at most 10000 */
	int         ns[MAX_NS], nn;
	int         mode[NMODES], nmodes;
	int         timeout_ms;
};

/* What the printer remembers: the header, each mode's N = 1 figures. */
struct printer {
	const struct opts *o;
	const char        *what;
	bool               header;
	double             rate1[NMODES], cpu1[NMODES];
	int                fails;
	bool               skipped[NMODES]; /* a run said n/a: all will */
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: " PROG " [-p shm|tcp|sockets|verbs|efa] [-n LIST] "
	        "[-S SIZE] [-M MSGS]\n"
	        "                  [--warmup W]"
	        " [--mode push|log|both] [--drop] [--timeout SEC]\n"
	        "                  [--csv] [--local | (under mpirun) [-B HOST] "
	        "[-P PORT]]\n"
	        "One PUB, N SUBs: messages/s and the publisher's CPU ns per "
	        "message, per N and mode.\n"
	        "  -n LIST    subscriber counts, e.g. 1,2,4,8 (default) or "
	        "1-8 (ranges allowed);\n"
	        "             under mpirun -np N+1 at most N (default: 1,2,4,8 "
	        "up to N, and N)\n"
	        "  -S SIZE    bytes per message (default 64; k/m suffix)\n"
	        "  -M MSGS    timed messages per run (default 100000)\n"
	        "  --warmup W untimed messages first (default M/10, at most "
	        "10000)\n"
	        "  --mode     push, log or both (default)\n"
	        "  --drop     PUB with RMQ_NODROP=0: it never waits, and a "
	        "subscriber that cannot\n"
	        "             keep up misses messages (dropped); msgs/s is "
	        "then the publisher's\n"
	        "             send rate, pub ns its send loop's CPU / M, "
	        "copies/s what the\n"
	        "             subscribers received / (first send .. last "
	        "done); needs -S >= 8\n"
	        "  --timeout  seconds a subscriber or the publisher waits for a "
	        "message (default 60)\n"
	        "  --local    fork the publisher (first CPU) and N subscribers "
	        "(the other CPUs,\n"
	        "             round-robin) per run; else under mpirun rank 0 "
	        "publishes\n");
}

/* "1,2,4,8" or "1-8" or a mix. */
static int
parse_ns(const char *arg, int *ns, int *nn)
{
	char *dup, *tok, *save = NULL, *end;
	long  a, b, v;
	int   rc = 0;

	*nn = 0;
	dup = strdup(arg);
	if (dup == NULL)
		return -1;
	for (tok = strtok_r(dup, ",", &save); tok != NULL && rc == 0;
	     tok = strtok_r(NULL, ",", &save)) {
		a = strtol(tok, &end, 10);
		b = a;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		if (end == tok || *end != '\0' || a < 1 || b < a ||
		    b > MAX_SUBS) {
			rc = -1;
			break;
		}
		for (v = a; v <= b; v++) {
			if (*nn == MAX_NS) {
				rc = -1;
				break;
			}
			ns[(*nn)++] = (int) v;
		}
	}
	free(dup);
	return rc == 0 && *nn > 0 ? 0 : -1;
}

/* ------------------------------------------------------------- printing */

static void
print_header(struct printer *pr, const char *prov)
{
	const struct opts *o = pr->o;
	int                k;

	pr->header = true;
	if (o->csv) {
		printf(FAN_CSV_HEADER "\n");
		return;
	}
	printf("# " PROG " %s: provider %s, %zu B messages, M = %llu "
	       "(after %lld warm-up), %s\n"
	       "# N:",
	       rmq_version(), prov, o->size, (unsigned long long) o->msgs,
	       (long long) o->warmup, pr->what);
	for (k = 0; k < o->nn; k++)
		printf(" %d", o->ns[k]);
	if (o->drop)
		printf("; push: RMQ_FANOUT_LOG 0, log: RMQ_FANOUT_LOG 1\n"
		       "# PUB with RMQ_NODROP=0 (--drop): msgs/s = the "
		       "publisher's send rate, pub ns = its\n"
		       "# send loop's CPU / M; copies/s = timed messages the "
		       "subscribers received / (first\n"
		       "# timed send .. last subscriber done); received + "
		       "dropped (rmq_stats) = N * M;\n");
	else
		printf("; PUB with RMQ_NODROP=1; push: RMQ_FANOUT_LOG 0, log: "
		       "RMQ_FANOUT_LOG 1\n"
		       "# msgs/s = M / (first timed send .. last subscriber "
		       "done); copies/s = N * msgs/s;\n"
		       "# pub ns = publisher process CPU (send loop + wait) / "
		       "M;\n");
	printf("# MB/s = msgs/s * size (1 MB = 10^6 B); sub ns = mean "
	       "subscriber CPU over its\n"
	       "# receive loop / M; vs N=1 = msgs/s and pub ns over that "
	       "mode's N = 1 figures\n"
	       "# %4s %3s %12s %12s %9s %9s %9s %8s %8s %7s\n",
	       "mode", "N", "msgs/s", "copies/s", "MB/s", "pub ns", "sub ns",
	       "rate/N1", "cpu/N1", "dropped");
	fflush(stdout);
}

static void
print_res(struct printer *pr, const struct fan_res *r)
{
	const struct opts *o = pr->o;
	double             m = (double) o->msgs;
	double             rate, copies, pub, sub;
	char               rr[16] = "-", cr[16] = "-";

	if (!pr->header)
		print_header(pr, r->prov);
	if (r->ok < 0) {
		pr->skipped[r->mode] = true;
		if (o->csv)
			printf("%s,%d,%zu,%llu,n/a,-,-,-,-,-,-,-\n",
			       modes[r->mode].name, r->n, o->size,
			       (unsigned long long) o->msgs);
		else
			printf("  %4s %3d %12s\n", modes[r->mode].name, r->n,
			       "n/a");
		fflush(stdout);
		return;
	}
	if (!r->ok) {
		pr->fails++;
		if (o->csv)
			printf("%s,%d,%zu,%llu,FAIL,-,-,-,-,-,-,-\n",
			       modes[r->mode].name, r->n, o->size,
			       (unsigned long long) o->msgs);
		else
			printf("  %4s %3d %12s\n", modes[r->mode].name, r->n,
			       "FAIL");
		fflush(stdout);
		return;
	}
	rate   = r->rate_us > 0 ? m * 1e6 / r->rate_us : 0;
	copies = r->us > 0 ? (double) r->got * 1e6 / r->us : 0;
	pub    = (double) r->pub_cpu_ns / m;
	sub  = (double) r->sub_cpu_ns / m / r->n;
	if (r->n == 1) {
		pr->rate1[r->mode] = rate;
		pr->cpu1[r->mode]  = pub;
	}
	if (pr->rate1[r->mode] > 0)
		snprintf(rr, sizeof(rr), "%.3f", rate / pr->rate1[r->mode]);
	if (pr->cpu1[r->mode] > 0)
		snprintf(cr, sizeof(cr), "%.3f", pub / pr->cpu1[r->mode]);
	if (o->csv)
		printf("%s,%d,%zu,%llu,%.0f,%.0f,%.2f,%.1f,%.1f,%s,%s,%llu\n",
		       modes[r->mode].name, r->n, o->size,
		       (unsigned long long) o->msgs, rate, copies,
		       rate * (double) o->size / 1e6, pub, sub, rr, cr,
		       (unsigned long long) r->dropped);
	else
		printf("  %4s %3d %12.0f %12.0f %9.2f %9.1f %9.1f %8s %8s "
		       "%7llu\n",
		       modes[r->mode].name, r->n, rate, copies,
		       rate * (double) o->size / 1e6, pub, sub, rr, cr,
		       (unsigned long long) r->dropped);
	fflush(stdout);
}

/* ---------------------------------------------------------- subscriber */

static int
send_rep(rmq_socket *ctl, struct fan_rep *r)
{
	ssize_t rc;

	r->magic = CTL_MAGIC;
	rc       = rmq_send(ctl, r, sizeof(*r), 0);
	return rc < 0 ? rmq_perf_die("send to the publisher", rc) : 0;
}

/* Receive n messages from first on; the reply says how it went. */
static void
take(rmq_socket *sub, uint8_t *buf, const struct fan_cmd *c, uint64_t first,
     uint64_t n, struct fan_rep *r)
{
	uint64_t k, seq;
	ssize_t  rc;

	for (k = 0; k < n; k++) {
		rc = rmq_recv(sub, buf, c->size, 0);
		if (rc < 0) {
			r->err = (int32_t) rc;
			return;
		}
		r->got++;
		if (c->size >= sizeof(seq)) {
			memcpy(&seq, buf, sizeof(seq));
			if ((size_t) rc != c->size || seq != first + k) {
				if (r->bad++ == 0)
					r->first_bad = first + k;
			}
		} else if ((size_t) rc != c->size && r->bad++ == 0) {
			r->first_bad = first + k;
		}
	}
}

/*
 * --drop: one phase, from index first on.  Receive until the publisher's
 * END has said where the phase ends and we have its last message, or,
 * after END, quiet_ms pass without one (the rest were dropped for us).
 * *next is the least index still to come: indices only grow across the
 * phases, a gap being a drop.  Only this phase's count in r->got: one of
 * the warm-up coming late (its drain ended quiet) is neither got nor
 * dropped in the timed phase.
 */
static void
take_drop(rmq_socket *sub, rmq_socket *ctl, uint8_t *buf, size_t size,
          uint64_t first, int quiet_ms, int timeout_ms, uint64_t *next,
          struct fan_rep *r)
{
	rmq_pollitem   it[2];
	struct fan_cmd e;
	uint64_t       seq, end = UINT64_MAX; /* no END yet */
	ssize_t        rc;

	while (*next < end) {
		rc = rmq_recv(sub, buf, size, RMQ_DONTWAIT);
		if (rc >= 0) {
			memcpy(&seq, buf, sizeof(seq));
			if ((size_t) rc != size || seq < *next) {
				if (r->bad++ == 0)
					r->first_bad = *next;
				continue;
			}
			if (seq >= first)
				r->got++;
			*next = seq + 1;
			continue;
		}
		if (rc != -RMQ_EAGAIN) {
			r->err = (int32_t) rc;
			return;
		}
		it[0] = (rmq_pollitem){.socket = sub, .events = RMQ_POLLIN};
		it[1] = (rmq_pollitem){.socket = ctl, .events = RMQ_POLLIN};
		rc    = rmq_poll(it, end == UINT64_MAX ? 2 : 1,
		                 end == UINT64_MAX ? timeout_ms : quiet_ms);
		if (rc < 0) {
			r->err = (int32_t) rc;
			return;
		}
		if (rc == 0) {
			if (end == UINT64_MAX)
				r->err = -RMQ_EAGAIN; /* neither came */
			return;
		}
		if (end != UINT64_MAX || !(it[1].revents & RMQ_POLLIN))
			continue;
		rc = rmq_recv(ctl, &e, sizeof(e), 0);
		if (rc != (ssize_t) sizeof(e) || e.magic != CTL_MAGIC ||
		    e.cmd != CMD_END) {
			r->err = rc < 0 ? (int32_t) rc : -RMQ_EPROTO;
			return;
		}
		end = e.end;
	}
}

/*
 * Until the publisher's next command, keep the SUB progressing.  A log
 * subscriber writes its cursor, which settles its drop count, as it reads
 * (the caught-up one after its last message), and a closing PUB lingers
 * until every log subscriber's cursor has reached the end.
 */
static int
hold(rmq_socket *ctl, rmq_socket *sub)
{
	rmq_pollitem it[2] = {{.socket = ctl, .events = RMQ_POLLIN},
	                      {.socket = sub, .events = 0}};
	int          rc;

	while ((rc = rmq_poll(it, 2, -1)) == 0)
		;
	return rc < 0 ? rmq_perf_die("rmq_poll", rc) : 0;
}

/* One run: SUB, READY, warm-up, WARM, timed, DONE. */
static int
sub_run(const struct opts *o, rmq_ctx *ctx, rmq_socket *ctl,
        const struct fan_cmd *c, uint8_t *buf)
{
	struct fan_rep r   = {.what = REP_READY};
	rmq_socket    *sub = NULL;
	uint64_t       cpu0, next = 0;
	int            rc, linger = LINGER_MS, tmo = o->timeout_ms;
	int            ret = 1;

	rc = rmq_socket_open(ctx, RMQ_SUB, &sub);
	if (rc == 0) {
		rmq_setopt(sub, RMQ_LINGER, &linger, sizeof(linger));
		rc = rmq_setopt(sub, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	}
	/* Before connecting: the PUB has the filter when connect returns. */
	if (rc == 0)
		rc = rmq_setopt(sub, RMQ_SUBSCRIBE, "", 0);
	if (rc == 0)
		rc = rmq_connect(sub, c->ep);
	r.err = rc;
	if (send_rep(ctl, &r) != 0 || rc != 0)
		goto out;
	r = (struct fan_rep){.what = REP_WARM};
	if (o->drop)
		take_drop(sub, ctl, buf, c->size, 0, QUIET_WARM_MS, tmo, &next,
		          &r);
	else
		take(sub, buf, c, 0, c->warmup, &r);
	if (send_rep(ctl, &r) != 0 || r.err != 0)
		goto out;
	r    = (struct fan_rep){.what = REP_DONE};
	cpu0 = pp_cpu_ns();
	if (o->drop)
		take_drop(sub, ctl, buf, c->size, c->warmup, QUIET_TIMED_MS,
		          tmo, &next, &r);
	else
		take(sub, buf, c, c->warmup, c->msgs, &r);
	r.cpu_ns = pp_cpu_ns() - cpu0;
	if (send_rep(ctl, &r) != 0 || r.err != 0 || hold(ctl, sub) != 0)
		goto out;
	ret = 0;
out:
	if (sub != NULL)
		rmq_close(sub);
	return ret;
}

/* A subscriber: follow the publisher's commands until QUIT. */
static int
subscriber(const struct opts *o, const char *ctl_ep)
{
	struct fan_cmd c;
	rmq_ctx       *ctx = NULL;
	rmq_socket    *ctl = NULL;
	uint8_t       *buf = NULL;
	size_t         cap = 0;
	ssize_t        rc;
	int            linger = LINGER_MS, cto = 60000, ret = 1;

	rc = rmq_ctx_new(&ctx, NULL);
	if (rc != 0)
		return rmq_perf_die("rmq_ctx_new", rc);
	rc = rmq_socket_open(ctx, RMQ_PAIR, &ctl);
	if (rc != 0) {
		rmq_perf_die("rmq_socket_open", rc);
		goto out;
	}
	rmq_setopt(ctl, RMQ_LINGER, &linger, sizeof(linger));
	rmq_setopt(ctl, RMQ_CONNECT_TIMEOUT, &cto, sizeof(cto));
	rc = rmq_connect(ctl, ctl_ep);
	if (rc != 0) {
		rmq_perf_die(ctl_ep, rc);
		goto out;
	}
	for (;;) {
		rc = rmq_recv(ctl, &c, sizeof(c), 0);
		if (rc < 0) {
			rmq_perf_die("recv from the publisher", rc);
			goto out;
		}
		if ((size_t) rc != sizeof(c) || c.magic != CTL_MAGIC) {
			rmq_perf_die("recv from the publisher", -RMQ_EPROTO);
			goto out;
		}
		if (c.cmd == CMD_QUIT)
			break;
		c.ep[sizeof(c.ep) - 1] = '\0';
		if (c.size > cap || buf == NULL) {
			free(buf);
			cap = c.size > 8 ? c.size : 8;
			buf = malloc(cap);
			if (buf == NULL) {
				rmq_perf_die("malloc", -ENOMEM);
				goto out;
			}
		}
		if (sub_run(o, ctx, ctl, &c, buf) != 0)
			goto out;
	}
	ret = 0;
out:
	free(buf);
	if (ctl != NULL)
		rmq_close(ctl);
	rmq_ctx_destroy(ctx);
	return ret;
}

/* ----------------------------------------------------------- publisher */

/*
 * One reply of kind what from each of ctl[0..n-1], polling pub (no events)
 * meanwhile, so it answers handshakes and serves reads.  Fails on a reply
 * that says so, or when timeout_ms pass without a reply.
 */
static int
wait_all(rmq_socket **ctl, int n, rmq_socket *pub, uint32_t what,
         struct fan_rep *rep, int timeout_ms)
{
	static const char *const names[] = {"", "READY", "WARM", "DONE"};
	rmq_pollitem             it[MAX_SUBS + 1];
	int                      idx[MAX_SUBS + 1];
	bool                     got[MAX_SUBS] = {false};
	int                      left = n, k, m, rc;
	ssize_t                  len;

	while (left > 0) {
		m = 0;
		for (k = 0; k < n; k++)
			if (!got[k]) {
				it[m]  = (rmq_pollitem){.socket = ctl[k],
				                        .events = RMQ_POLLIN};
				idx[m++] = k;
			}
		it[m++] = (rmq_pollitem){.socket = pub, .events = 0};
		rc = rmq_poll(it, m, timeout_ms);
		if (rc < 0)
			return rmq_perf_die("rmq_poll", rc);
		if (rc == 0) {
			fprintf(stderr, PROG ": no %s from %d of %d "
			        "subscribers in %d s (first: %d)\n",
			        names[what], left, n, timeout_ms / 1000,
			        idx[0] + 1);
			return 1;
		}
		for (k = 0; k < m - 1; k++) {
			if (!(it[k].revents & RMQ_POLLIN))
				continue;
			len = rmq_recv(ctl[idx[k]], &rep[idx[k]],
			               sizeof(rep[0]), 0);
			if (len < 0)
				return rmq_perf_die("recv from a subscriber",
				                    len);
			if ((size_t) len != sizeof(rep[0]) ||
			    rep[idx[k]].magic != CTL_MAGIC ||
			    rep[idx[k]].what != what)
				return rmq_perf_die("recv from a subscriber",
				                    -RMQ_EPROTO);
			got[idx[k]] = true;
			left--;
		}
	}
	return 0;
}

/* Did every subscriber get every message (--drop: any of them), in order?
 * Say who did not. */
static bool
all_good(const struct opts *o, const struct fan_rep *rep, int n,
         uint64_t want, const char *phase)
{
	bool ok = true;
	int  k;

	for (k = 0; k < n; k++) {
		if (rep[k].err == 0 && (o->drop || rep[k].got == want) &&
		    rep[k].bad == 0)
			continue;
		ok = false;
		fprintf(stderr,
		        PROG ": subscriber %d, %s: %s; %llu of %llu messages, "
		        "%llu out of sequence (first: #%llu%s expected)\n",
		        k + 1, phase,
		        rep[k].err != 0 ? rmq_strerror(rep[k].err) : "ok",
		        (unsigned long long) rep[k].got,
		        (unsigned long long) want,
		        (unsigned long long) rep[k].bad,
		        (unsigned long long) rep[k].first_bad,
		        o->drop ? " or later" : "");
	}
	return ok;
}

/* --drop: tell subscribers 1..n the phase is over, before index end. */
static int
tell_end(rmq_socket **ctl, int n, uint64_t end)
{
	struct fan_cmd e = {.magic = CTL_MAGIC, .cmd = CMD_END, .end = end};
	ssize_t        rc;
	int            k;

	for (k = 0; k < n; k++) {
		rc = rmq_send(ctl[k], &e, sizeof(e), 0);
		if (rc < 0)
			return rmq_perf_die("send END", rc);
	}
	return 0;
}

/* --drop: poll pub (no events) until its drop count held still for
 * SETTLE_MS (at most SETTLE_MAX_MS), so that it took in its log
 * subscribers' cursor reports and counted the misses they settle (a slow
 * provider, sockets, takes a while to carry the last ones). */
static int
settle(rmq_socket *pub)
{
	rmq_pollitem     it = {.socket = pub, .events = 0};
	struct rmq_stats st;
	uint64_t         last = UINT64_MAX;
	double           end = pp_now_us() + SETTLE_MAX_MS * 1e3;
	int              rc;

	while (pp_now_us() < end) {
		rc = rmq_poll(&it, 1, SETTLE_MS);
		if (rc < 0)
			return rmq_perf_die("rmq_poll", rc);
		rmq_stats(pub, &st);
		if (st.dropped == last)
			return 0;
		last = st.dropped;
	}
	return 0;
}

/* Send messages first .. first + n - 1, numbered. */
static int
pub_send(rmq_socket *pub, uint8_t *buf, size_t size, uint64_t first,
         uint64_t n)
{
	uint64_t k, seq;
	ssize_t  rc;

	for (k = 0; k < n; k++) {
		seq = first + k;
		if (size >= sizeof(seq))
			memcpy(buf, &seq, sizeof(seq));
		rc = rmq_send(pub, buf, size, 0);
		if (rc < 0) {
			fprintf(stderr, PROG ": send #%llu: %s\n",
			        (unsigned long long) seq, rmq_strerror((int) rc));
			return 1;
		}
	}
	return 0;
}

/* One run of one mode with the first n subscribers. */
static int
pub_run(const struct opts *o, rmq_ctx *ctx, rmq_socket **ctl, int mode,
        int n, struct fan_res *res)
{
	struct fan_cmd   c = {.magic  = CTL_MAGIC,
	                      .cmd    = CMD_RUN,
	                      .size   = o->size,
	                      .warmup = (uint64_t) o->warmup,
	                      .msgs   = o->msgs};
	struct fan_rep   rep[MAX_SUBS];
	struct rmq_stats st0, st1;
	rmq_socket      *pub = NULL;
	uint8_t         *buf = NULL;
	char             ep[256];
	size_t           len = sizeof(c.ep), plen = sizeof(res->prov);
	double           t0, t1;
	uint64_t         cpu0, cpu1;
	size_t           flen = sizeof(int);
	int              rc, k, nodrop = !o->drop, linger = LINGER_MS, fan;
	int              tmo = o->timeout_ms, ret = 1;

	res->mode = mode;
	res->n    = n;
	res->ok   = 0;
	buf       = calloc(1, o->size > 8 ? o->size : 8);
	if (buf == NULL)
		return rmq_perf_die("malloc", -ENOMEM);
	pp_fill(buf, o->size, 1);
	rc = rmq_socket_open(ctx, RMQ_PUB, &pub);
	if (rc != 0) {
		rmq_perf_die("rmq_socket_open PUB", rc);
		goto out;
	}
	rmq_setopt(pub, RMQ_LINGER, &linger, sizeof(linger));
	rmq_setopt(pub, RMQ_SNDTIMEO, &tmo, sizeof(tmo));
	rc = rmq_setopt(pub, RMQ_NODROP, &nodrop, sizeof(nodrop));
	if (rc != 0) {
		rmq_perf_die("RMQ_NODROP", rc);
		goto out;
	}
	fan = modes[mode].fanout;
	rc  = rmq_setopt(pub, RMQ_FANOUT_LOG, &fan, sizeof(fan));
	if (rc != 0) {
		rmq_perf_die("RMQ_FANOUT_LOG", rc);
		goto out;
	}
	snprintf(ep, sizeof(ep), "%s://%s:0", o->prov, o->host);
	rc = rmq_bind(pub, ep);
	if (rc == 0)
		rc = rmq_getopt(pub, RMQ_LAST_ENDPOINT, c.ep, &len);
	if (rc != 0) {
		rmq_perf_die(ep, rc);
		goto out;
	}
	/* A provider without remote reads has no log (0 then). */
	if (fan > 0 && (rmq_getopt(pub, RMQ_FANOUT_LOG, &fan, &flen) != 0 ||
	                fan == 0)) {
		fprintf(stderr, PROG ": %s mode, N = %d: this provider has no "
		        "fan-out log; skipped\n", modes[mode].name, n);
		res->ok = -1;
		ret     = 0;
		goto out;
	}
	rmq_getopt(pub, RMQ_PROVIDER_NAME, res->prov, &plen);
	for (k = 0; k < n; k++) {
		rc = (int) rmq_send(ctl[k], &c, sizeof(c), 0);
		if (rc < 0) {
			rmq_perf_die("send to a subscriber", rc);
			goto out;
		}
	}
	if (wait_all(ctl, n, pub, REP_READY, rep, tmo) != 0)
		goto out;
	for (k = 0; k < n; k++)
		if (rep[k].err != 0) {
			fprintf(stderr, PROG ": subscriber %d: SUB: %s\n", k + 1,
			        rmq_strerror(rep[k].err));
			goto out;
		}
	/* --drop: the warm-up's misses are not the timed phase's, so the
	 * snapshot waits for them to be counted. */
	if (pub_send(pub, buf, o->size, 0, c.warmup) != 0 ||
	    (o->drop && tell_end(ctl, n, c.warmup) != 0) ||
	    wait_all(ctl, n, pub, REP_WARM, rep, tmo) != 0 ||
	    !all_good(o, rep, n, c.warmup, "warm-up") ||
	    (o->drop && settle(pub) != 0))
		goto out;
	rmq_stats(pub, &st0);
	t0   = pp_now_us();
	cpu0 = pp_cpu_ns();
	if (pub_send(pub, buf, o->size, c.warmup, c.msgs) != 0)
		goto out;
	t1   = pp_now_us();
	cpu1 = pp_cpu_ns();
	if ((o->drop && tell_end(ctl, n, c.warmup + c.msgs) != 0) ||
	    wait_all(ctl, n, pub, REP_DONE, rep, tmo) != 0)
		goto out;
	res->us = pp_now_us() - t0;
	/* --drop: the publisher's own work.  Else it waits for the slowest
	 * subscriber, and that is its rate and its cost. */
	res->rate_us    = o->drop ? t1 - t0 : res->us;
	res->pub_cpu_ns = (o->drop ? cpu1 : pp_cpu_ns()) - cpu0;
	if (o->drop && settle(pub) != 0)
		goto out;
	rmq_stats(pub, &st1);
	res->dropped    = st1.dropped - st0.dropped;
	res->sub_cpu_ns = 0;
	res->got        = 0;
	for (k = 0; k < n; k++) {
		res->sub_cpu_ns += rep[k].cpu_ns;
		res->got += rep[k].got;
	}
	if (!all_good(o, rep, n, c.msgs, "timed"))
		goto out;
	if (!o->drop && res->dropped != 0)
		fprintf(stderr, PROG ": %s, N = %d: the PUB dropped %llu "
		        "copies (rmq_stats) with RMQ_NODROP=1\n",
		        modes[mode].name, n,
		        (unsigned long long) res->dropped);
	/* Each copy of a timed message was received or counted dropped. */
	if (o->drop && res->got + res->dropped != (uint64_t) n * c.msgs) {
		fprintf(stderr, PROG ": %s, N = %d: received %llu + dropped "
		        "%llu != N * M = %llu\n",
		        modes[mode].name, n, (unsigned long long) res->got,
		        (unsigned long long) res->dropped,
		        (unsigned long long) n * c.msgs);
		goto out;
	}
	res->ok = 1;
	ret     = 0;
out:
	if (pub != NULL)
		rmq_close(pub);
	free(buf);
	return ret;
}

/* Where the publisher sends each run's figures. */
struct sink {
	struct printer *pr; /* print here, or */
	int             fd; /* write to this pipe */
};

static int
emit(const struct sink *k, const struct fan_res *r)
{
	if (k->pr != NULL) {
		print_res(k->pr, r);
		return 0;
	}
	return write(k->fd, r, sizeof(*r)) == (ssize_t) sizeof(*r) ? 0 : 1;
}

/*
 * The publisher: bind a control PAIR per subscriber (port + i, or an
 * ephemeral port told through ep_fd[i]), run the (mode, n) runs, QUIT.
 */
static int
publisher(const struct opts *o, int nsubs, const int *ep_fd,
          const int (*runs)[2], int nruns, const struct sink *out)
{
	struct fan_cmd quit = {.magic = CTL_MAGIC, .cmd = CMD_QUIT};
	struct fan_res res;
	rmq_ctx       *ctx = NULL;
	rmq_socket    *ctl[MAX_SUBS] = {NULL};
	char           ep[256];
	size_t         len;
	int            rc, i, linger = LINGER_MS, ret = 1;

	rc = rmq_ctx_new(&ctx, NULL);
	if (rc != 0)
		return rmq_perf_die("rmq_ctx_new", rc);
	for (i = 0; i < nsubs; i++) {
		rc = rmq_socket_open(ctx, RMQ_PAIR, &ctl[i]);
		if (rc != 0) {
			rmq_perf_die("rmq_socket_open", rc);
			goto out;
		}
		rmq_setopt(ctl[i], RMQ_LINGER, &linger, sizeof(linger));
		if (ep_fd != NULL)
			snprintf(ep, sizeof(ep), "%s://%s:0", o->prov, o->host);
		else
			snprintf(ep, sizeof(ep), "%s://%s:%d", o->prov, o->host,
			         o->port + 1 + i);
		rc = rmq_bind(ctl[i], ep);
		if (rc != 0) {
			rmq_perf_die(ep, rc);
			goto out;
		}
		if (ep_fd == NULL)
			continue;
		len = sizeof(ep);
		rmq_getopt(ctl[i], RMQ_LAST_ENDPOINT, ep, &len);
		len = strlen(ep);
		if (write(ep_fd[i], ep, len) != (ssize_t) len)
			goto out;
		close(ep_fd[i]);
	}
	for (i = 0; i < nruns; i++) {
		memset(&res, 0, sizeof(res));
		rc = pub_run(o, ctx, ctl, runs[i][0], runs[i][1], &res);
		if (emit(out, &res) != 0 || rc != 0)
			goto out;
	}
	for (i = 0; i < nsubs; i++) {
		rc = (int) rmq_send(ctl[i], &quit, sizeof(quit), 0);
		if (rc < 0) {
			rmq_perf_die("send QUIT", rc);
			goto out;
		}
	}
	ret = 0;
out:
	for (i = 0; i < nsubs; i++)
		if (ctl[i] != NULL)
			rmq_close(ctl[i]);
	rmq_ctx_destroy(ctx);
	return ret;
}

/* --------------------------------------------------------------- --local */

/* The CPUs this process may run on, in order. */
static int
cpu_list(int *cpus, int max)
{
	cpu_set_t set;
	int       c, n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	for (c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

/* Read the endpoint until EOF (nothing: the publisher failed). */
static int
read_ep(int fd, char *ep, size_t cap)
{
	size_t  got = 0;
	ssize_t n;

	while (got < cap - 1 && (n = read(fd, ep + got, cap - 1 - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t) n;
	}
	ep[got] = '\0';
	return got > 0 ? 0 : -1;
}

/* Wait for pid until deadline (us, pp_now_us), then kill it. */
static int
reap(pid_t pid, double deadline)
{
	int   status = 0;
	pid_t w;

	while ((w = waitpid(pid, &status, WNOHANG)) == 0 &&
	       pp_now_us() < deadline)
		usleep(10000);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return 1;
	}
	return w == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0
	                                                                 : 1;
}

/*
 * One run, forked: n subscribers and the publisher, which reports through
 * a pipe.  Nothing here touches librmq, so each child starts clean.
 */
static int
local_run(const struct opts *o, int mode, int n, struct printer *pr)
{
	const int      run[1][2] = {{mode, n}};
	struct fan_res res;
	struct sink    out;
	int            ep_pipe[MAX_SUBS][2], res_pipe[2], wfd[MAX_SUBS];
	int            cpus[CPU_SETSIZE], ncpu, i, j, ret = 0, got = 0;
	pid_t          kids[MAX_SUBS + 1], pid, parent = getpid();
	char           ep[256];
	ssize_t        len;
	double         deadline;

	ncpu = cpu_list(cpus, CPU_SETSIZE);
	if (pipe(res_pipe) != 0)
		return rmq_perf_die("pipe", -errno);
	for (i = 0; i < n; i++)
		if (pipe(ep_pipe[i]) != 0)
			return rmq_perf_die("pipe", -errno);
	fflush(stdout);
	for (i = 0; i <= n; i++) {
		pid = fork();
		if (pid < 0) {
			ret = rmq_perf_die("fork", -errno);
			for (j = 0; j < i; j++) {
				kill(kids[j], SIGKILL);
				waitpid(kids[j], NULL, 0);
			}
			return ret;
		}
		if (pid > 0) {
			kids[i] = pid;
			continue;
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		/* The log serves subscribers on other hosts; ones on this
		 * host are pushed to through their local rings (rmq_paths(7),
		 * LOCAL): measure the log, as across nodes. */
		if (modes[mode].fanout > 0)
			setenv("RMQ_LOCAL", "0", 1);
		if (i < n) { /* subscriber i + 1 */
			close(res_pipe[0]);
			close(res_pipe[1]);
			for (j = 0; j < n; j++) {
				close(ep_pipe[j][1]);
				if (j != i)
					close(ep_pipe[j][0]);
			}
			if (ncpu > 0)
				rmq_perf_pin(ncpu > 1 ? cpus[1 + i % (ncpu - 1)]
				                      : cpus[0]);
			if (read_ep(ep_pipe[i][0], ep, sizeof(ep)) != 0)
				_exit(1);
			_exit(subscriber(o, ep));
		}
		/* the publisher */
		close(res_pipe[0]);
		for (j = 0; j < n; j++) {
			close(ep_pipe[j][0]);
			wfd[j] = ep_pipe[j][1];
		}
		if (ncpu > 0)
			rmq_perf_pin(cpus[0]);
		out.pr = NULL;
		out.fd = res_pipe[1];
		_exit(publisher(o, n, wfd, run, 1, &out));
	}
	close(res_pipe[1]);
	for (i = 0; i < n; i++) {
		close(ep_pipe[i][0]);
		close(ep_pipe[i][1]);
	}
	while ((len = read(res_pipe[0], &res, sizeof(res))) != 0) {
		if (len < 0 && errno == EINTR)
			continue;
		if (len != (ssize_t) sizeof(res))
			break;
		print_res(pr, &res);
		got++;
	}
	close(res_pipe[0]);
	/* The publisher has reported (or died): everyone ends soon. */
	deadline = pp_now_us() + (o->timeout_ms + LINGER_MS) * 1e3;
	if (ret == 0 && reap(kids[n], deadline) != 0)
		ret = 1;
	for (i = 0; i < n; i++) {
		if (ret != 0)
			kill(kids[i], SIGTERM);
		if (reap(kids[i], deadline) != 0)
			ret = 1;
	}
	if (ret != 0 && got == 0) {
		res       = (struct fan_res){.mode = mode, .n = n};
		snprintf(res.prov, sizeof(res.prov), "%s", o->prov);
		print_res(pr, &res);
	}
	return ret;
}

static int
run_local(const struct opts *o)
{
	struct printer pr = {.o = o};
	struct fan_res skip;
	int            cpus[CPU_SETSIZE], ncpu, m, k, ret = 0;
	char           what[128];

	ncpu = cpu_list(cpus, CPU_SETSIZE);
	if (ncpu == 2)
		snprintf(what, sizeof(what), "local: publisher on CPU %d, "
		         "subscribers on CPU %d", cpus[0], cpus[1]);
	else if (ncpu > 2)
		snprintf(what, sizeof(what), "local: publisher on CPU %d, "
		         "subscribers round-robin on CPUs %d..%d",
		         cpus[0], cpus[1], cpus[ncpu - 1]);
	else
		snprintf(what, sizeof(what), "local: all on CPU %d",
		         ncpu > 0 ? cpus[0] : 0);
	pr.what = what;
	for (m = 0; m < o->nmodes; m++)
		for (k = 0; k < o->nn; k++) {
			if (pr.skipped[o->mode[m]]) {
				/* No need to start processes to hear it. */
				skip = (struct fan_res){.mode = o->mode[m],
				                        .n    = o->ns[k],
				                        .ok   = -1};
				print_res(&pr, &skip);
			} else if (local_run(o, o->mode[m], o->ns[k], &pr) !=
			           0) {
				ret = 1;
			}
		}
	return ret != 0 || pr.fails != 0 ? 1 : 0;
}

/* -------------------------------------------------------------- mpirun */

static int
run_mpi(struct opts *o)
{
	struct printer pr = {.o = o};
	struct sink    out = {.pr = &pr, .fd = -1};
	int            runs[NMODES * MAX_NS][2];
	int            rank, size, nsubs, m, k, nruns = 0;
	char           what[64], ep[256];

	pp_mpi_rank(&rank, &size);
	if (rank < 0) {
		fprintf(stderr, PROG ": neither --local nor under mpirun\n");
		return 2;
	}
	nsubs = size - 1;
	if (nsubs < 1 || nsubs > MAX_SUBS) {
		fprintf(stderr, PROG ": run with 2 to %d ranks (%d)\n",
		        MAX_SUBS + 1, size);
		return 2;
	}
	if (!o->ns_given) {
		/* 1, 2, 4, 8 up to N, and N. */
		o->nn = 0;
		for (k = 1; k < nsubs && k <= 8; k *= 2)
			o->ns[o->nn++] = k;
		o->ns[o->nn++] = nsubs;
	}
	for (k = 0; k < o->nn; k++)
		if (o->ns[k] > nsubs) {
			fprintf(stderr, PROG ": -n %d: only %d subscribers "
			        "(mpirun -np %d)\n", o->ns[k], nsubs, size);
			return 2;
		}
	if (o->port < 0)
		o->port = pp_job_port(0x666e); /* "fn" */
	if (rank > 0) {
		snprintf(ep, sizeof(ep), "%s://%s:%d", o->prov, o->host,
		         o->port + rank);
		return subscriber(o, ep);
	}
	for (m = 0; m < o->nmodes; m++)
		for (k = 0; k < o->nn; k++) {
			runs[nruns][0]   = o->mode[m];
			runs[nruns++][1] = o->ns[k];
		}
	snprintf(what, sizeof(what), "mpirun, %d ranks", size);
	pr.what = what;
	if (publisher(o, nsubs, NULL, (const int(*)[2]) runs, nruns, &out) !=
	    0)
		return 1;
	return pr.fails != 0 ? 1 : 0;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"local", no_argument, NULL, 'l'},
	    {"mode", required_argument, NULL, 'm'},
	    {"drop", no_argument, NULL, 'd'},
	    {"warmup", required_argument, NULL, 'w'},
	    {"timeout", required_argument, NULL, 't'},
	    {"csv", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.prov       = "shm",
	                 .host       = "127.0.0.1",
	                 .port       = -1,
	                 .size       = 64,
	                 .msgs       = 100000,
	                 .warmup     = -1,
	                 .ns         = {1, 2, 4, 8},
	                 .nn         = 4,
	                 .mode       = {0, 1},
	                 .nmodes     = 2,
	                 .timeout_ms = 60000};
	char       *end;
	long long   v;
	int         c;

	rmq_perf_prog = PROG;
	while ((c = getopt_long(argc, argv, "p:n:S:M:B:P:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			o.prov = optarg;
			break;
		case 'B':
			o.host = optarg;
			break;
		case 'P':
			o.port = atoi(optarg);
			break;
		case 'n':
			if (parse_ns(optarg, o.ns, &o.nn) != 0) {
				fprintf(stderr, PROG ": bad -n %s (1..%d)\n",
				        optarg, MAX_SUBS);
				return 2;
			}
			o.ns_given = true;
			break;
		case 'S':
			if (pp_parse_size(optarg, &o.size) != 0 ||
			    o.size == 0) {
				fprintf(stderr, PROG ": bad -S %s\n", optarg);
				return 2;
			}
			break;
		case 'M':
		case 'w':
		case 't':
			v = strtoll(optarg, &end, 10);
			if (end == optarg || *end != '\0' ||
			    v < (c == 'w' ? 0 : 1)) {
				fprintf(stderr, PROG ": bad value %s\n",
				        optarg);
				return 2;
			}
			if (c == 'M')
				o.msgs = (uint64_t) v;
			else if (c == 'w')
				o.warmup = v;
			else
				o.timeout_ms = v > 2000000 ? 2000000000
				                           : (int) v * 1000;
			break;
		case 'm':
			if (strcmp(optarg, "both") == 0) {
				o.nmodes = 2;
			} else if (strcmp(optarg, "push") == 0 ||
			           strcmp(optarg, "log") == 0) {
				o.nmodes  = 1;
				o.mode[0] = strcmp(optarg, "push") == 0 ? 0 : 1;
			} else {
				fprintf(stderr, PROG ": bad --mode %s (push, "
				        "log, both)\n", optarg);
				return 2;
			}
			break;
		case 'd':
			o.drop = true;
			break;
		case 'l':
			o.local = true;
			break;
		case 'v':
			o.csv = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	/* Only a message's index tells a subscriber what it missed. */
	if (o.drop && o.size < sizeof(uint64_t)) {
		fprintf(stderr, PROG ": --drop needs -S 8 or more\n");
		return 2;
	}
	if (o.warmup < 0)
		o.warmup = o.msgs / 10 < 10000 ? (int64_t) o.msgs / 10 : 10000;
	if (o.local)
		return run_local(&o);
	c = run_mpi(&o);
	if (c == 2)
		usage(stderr);
	return c;
}
