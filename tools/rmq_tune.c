/*
 * rmq_tune: measure, on this machine, how fast each path carries each
 * message size, and write the thresholds that follow from it as a librmq
 * configuration file (see rmq_tune(1)).
 *
 * For each pattern (PAIR, REQ/REP) and each path, a child process binds an
 * echo socket pinned to one CPU, this process connects from the other, both
 * force the path (RMQ_PATH), and this process times ping-pongs over a grid
 * of sizes.  Every path gets a fresh pair of sockets, so that what one path
 * needs (a raised eager limit, an ordered domain) cannot colour the figures
 * of another.  A size the forced path cannot carry (-RMQ_EMSGSIZE) or a
 * path the provider lacks (-RMQ_ENOTSUP) is left out, not an error.
 *
 * Other load on the machine only ever adds latency, and comes and goes.  So
 * the paths are timed in rounds, each round a sweep over all of them with
 * a share of the iterations, and a cell keeps the lowest of its rounds'
 * medians: a busy spell then slows one round of every path, not all the
 * rounds of one.
 *
 * Mixing the ring with other paths by size needs a domain that orders RMA
 * writes with sends, and on shm (1.17) asking for one turns off the CMA fast
 * path of RMA: rndv_read then takes twice as long or more.  So the ring is
 * timed on the ordered domain it will get, and when it would win somewhere,
 * every other path is timed there too and the choice "ring, with all of
 * that" is weighed against "no ring" as a whole.
 *
 * The thresholds come from an exhaustive search over the grid: every split
 * of the sizes into inject, eager, ring and one rendezvous path, in the
 * engine's order, scored by the sum over sizes of each latency relative to
 * the fastest path at that size (so 64 bytes counts as much as 4 MiB).
 * Within a tolerance the lower path is taken, and the ring last.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <rdma/fabric.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "prov.h" /* the provider rows, as data */
#include "rmq_path_rows.h" /* the path registry, as data */
#include "rmq.h"

#define TUNE_MAX_SIZES PP_MAX_SIZES
#define TUNE_TOL       0.03    /* within 3%: a tie, the lower path wins */
#define TUNE_RANK_EPS  1e-4    /* per size; far below any real gap */
#define TUNE_FAST_EPS  1e-6    /* then, between equals, the faster */
#define TUNE_EAGER     (256u << 10) /* eager limit while timing eager */
#define TUNE_RING_OPT  (64u << 10)  /* any ring_max > 0 asks for ordering */
#define TUNE_MIN_ITERS 5       /* timed round trips, whatever the budget */
#define TUNE_RCVTIMEO  20000   /* ms: a lost message ends the run */
#define MARK_LEN       8

/* Control messages; a ping of MARK_LEN bytes never holds these bytes. */
static const char mark_done[MARK_LEN] = {'R', 'M', 'Q', 'T',
                                         'D', 'O', 'N', 'E'};
static const char mark_skip[MARK_LEN] = {'R', 'M', 'Q', 'T',
                                         'S', 'K', 'I', 'P'};

/*
 * Table columns, from the path registry (rmq_path_rows.h): the range rows
 * in the engine's order by size, then the rendezvous rows, which are the
 * candidates above the ranges.  A link's own row is not measured (it
 * serves peers on its link, whatever the thresholds).
 */
#define TUNE_RANGE_RANGE(n) RMQ_ROW_ID_##n,
#define TUNE_RANGE_LARGE(n)
#define TUNE_RANGE_LINK(n)
#define TUNE_LARGE_RANGE(n)
#define TUNE_LARGE_LARGE(n) RMQ_ROW_ID_##n,
#define TUNE_LARGE_LINK(n)
#define TUNE_RANGE(n, k) TUNE_RANGE_##k(n)
#define TUNE_LARGE(n, k) TUNE_LARGE_##k(n)

static const int columns[] = {
	RMQ_PATH_ROWS(TUNE_RANGE) RMQ_PATH_ROWS(TUNE_LARGE)
};
#define NCOLUMNS ((int) (sizeof(columns) / sizeof(columns[0])))

static const int rndv_paths[] = {RMQ_PATH_ROWS(TUNE_LARGE)};
#define NRNDV ((int) (sizeof(rndv_paths) / sizeof(rndv_paths[0])))

/* Environment that would change what is measured: the defaults are. */
static const char *const ignored_env[] = {
	"RMQ_CONFIG",    "RMQ_PROVIDER", "RMQ_INJECT_MAX", "RMQ_EAGER_MAX",
	"RMQ_RING_MAX",  "RMQ_RNDV",     "RMQ_PATH",       NULL,
};

struct pattern {
	const char *key;   /* config section */
	const char *label; /* for people */
	int         measure_type, echo_type;
};

static const struct pattern patterns[] = {
	{"pair", "PAIR", RMQ_PAIR, RMQ_PAIR},
	{"reqrep", "REQ/REP", RMQ_REQ, RMQ_REP},
};
#define NPATTERNS ((int) (sizeof(patterns) / sizeof(patterns[0])))

static const size_t grid_default[] = {
	0,          64,         256,         1 << 10,     2 << 10,
	4 << 10,    8 << 10,    16 << 10,    32 << 10,    64 << 10,
	128 << 10,  256 << 10,  1 << 20,     4 << 20,
};
static const size_t grid_quick[] = {
	0, 64, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20,
};

struct opts {
	const char *prov;
	const struct rmq_prov *row; /* prov's provider row */
	const char *out;  /* NULL: stdout */
	const char *host; /* to bind, for the fabric providers */
	bool        quick;
	bool        pat[NPATTERNS];
	int         iters;  /* timed round trips per cell, at most */
	int         warmup; /* untimed round trips per cell, at most */
	int         rounds; /* sweeps over the paths; iters is shared out */
	double      budget_us; /* per cell, all rounds; warm-up a fifth more */
	int         cpus[2]; /* this process, the echo side */
	size_t      sizes[TUNE_MAX_SIZES];
	int         nsizes;
	size_t      max_size;
};

enum cell_state {
	CELL_NONE = 0, /* not measured */
	CELL_OK,
	CELL_BIG,    /* the path cannot carry this size (-RMQ_EMSGSIZE) */
	CELL_NOTSUP, /* the provider cannot do the path (-RMQ_ENOTSUP) */
	CELL_FAILED, /* something else went wrong: reported, left out */
};

struct cell {
	double us;    /* median one-way latency: the lowest round's */
	int    iters; /* timed, all rounds */
	int    state;
};

/* One pattern's figures on one kind of domain, by path and size index. */
struct table {
	struct cell c[RMQ_PATHS][TUNE_MAX_SIZES]; /* by path id */
};

/* A split of the grid: sizes [0,ninj) inject, then eager, ring, rndv. */
struct choice {
	bool   valid;
	bool   ordered; /* has a ring range: all figures from the o table */
	int    ninj, neag, nring;
	int    rndv;
	size_t inject_max, eager_max, ring_max; /* ring_max 0: no ring */
	double cost;
};

struct pat_result {
	const struct pattern *pat;
	struct table          u;  /* the default (unordered) domain */
	struct table          o;  /* the ordered domain the ring needs */
	bool                  o_full;      /* every path timed on o */
	bool                  ring_bysize; /* o lets the ring mix by size */
	bool                  have_dflt;
	size_t                inject_cap;  /* defaults of a plain socket */
	size_t                eager_dflt, ring_dflt;
	int                   rndv_dflt;
	struct choice         ch;
};

/* One fresh pair of sockets: a pattern, a path, a kind of domain. */
struct run {
	const struct opts    *o;
	const struct pattern *pat;
	int                   path;
	bool                  ordered;
	int                   round;
};

static char prov_name[64]; /* as libfabric names it, from a socket */
static int  nwarnings;

static void
usage(FILE *f)
{
	char names[128];

	rmq_prov_names(names, sizeof(names), "|", "|");
	fprintf(f,
	        "usage: rmq_tune -p %s [-o FILE] "
	        "[--quick] [-I ITERS]\n"
	        "                [--patterns pair,reqrep] [-S SIZE,...] "
	        "[-B HOST] [--cpus A,B]\n"
	        "                [--rounds N]\n"
	        "Times every path at every size between two processes on "
	        "this machine and\n"
	        "writes the fastest thresholds as a librmq configuration "
	        "file (FILE, or\n"
	        "standard output); the tables go to standard error.\n",
	        names);
}

static bool
refused(long rc)
{
	return rc == -RMQ_EMSGSIZE || rc == -RMQ_ENOTSUP;
}

/*
 * A forced path that cannot carry a size logs an error before it returns
 * one; here that is an answer, not a fault.  Send what the library writes
 * during such a call to a scratch file, and pass it on only when the call
 * failed some other way.
 */
struct quiet {
	int   saved;
	FILE *tmp;
};

static void
quiet_begin(struct quiet *q)
{
	fflush(stderr);
	q->saved = -1;
	q->tmp   = tmpfile();
	if (q->tmp == NULL)
		return;
	q->saved = dup(STDERR_FILENO);
	if (q->saved < 0 || dup2(fileno(q->tmp), STDERR_FILENO) < 0) {
		if (q->saved >= 0)
			close(q->saved);
		q->saved = -1;
		fclose(q->tmp);
		q->tmp = NULL;
	}
}

static void
quiet_end(struct quiet *q, bool replay)
{
	char   buf[512];
	size_t n;

	if (q->tmp == NULL)
		return;
	fflush(stderr);
	dup2(q->saved, STDERR_FILENO);
	close(q->saved);
	if (replay) {
		rewind(q->tmp);
		while ((n = fread(buf, 1, sizeof(buf), q->tmp)) > 0)
			fwrite(buf, 1, n, stderr);
	}
	fclose(q->tmp);
	q->tmp = NULL;
}

static void
warn_run(const struct run *r, size_t size, const char *what, long rc)
{
	nwarnings++;
	fprintf(stderr,
	        "rmq_tune: warning: %s %s%s at %zu B: %s: %s; left out from "
	        "this size on\n",
	        r->pat->label, rmq_path_name(r->path),
	        r->ordered ? " (ordered domain)" : "", size, what,
	        rmq_strerror((int) rc));
}

/* "4KiB" for a size the YAML file and the tables print. */
static const char *
fmt_size(size_t v, char *buf, size_t len)
{
	if (v != 0 && v % (1u << 20) == 0)
		snprintf(buf, len, "%zuMiB", v >> 20);
	else if (v != 0 && v % (1u << 10) == 0)
		snprintf(buf, len, "%zuKiB", v >> 10);
	else
		snprintf(buf, len, "%zu", v);
	return buf;
}

/* ---- the two sides of one run ---- */

static int
open_socket(const struct run *r, bool echo, rmq_ctx **ctx, rmq_socket **s)
{
	size_t eager = TUNE_EAGER, ring = TUNE_RING_OPT;
	int    tmo = echo ? 3 * TUNE_RCVTIMEO : TUNE_RCVTIMEO;
	int    rc;

	*s = NULL;
	rc = rmq_ctx_new(ctx, NULL);
	if (rc != 0)
		return rc;
	rc = rmq_socket_open(*ctx, echo ? r->pat->echo_type
	                                : r->pat->measure_type, s);
	if (rc == 0)
		rc = rmq_setopt(*s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	/*
	 * Before bind/connect, where the engine sizes slabs and slots and
	 * picks the domain: eager above its default limit needs both ends
	 * to take it, and any ring_max > 0 asks for the ordered domain.
	 */
	if (rc == 0 && r->path == RMQ_PATH_EAGER)
		rc = rmq_setopt(*s, RMQ_EAGER_MAX, &eager, sizeof(eager));
	if (rc == 0 && r->ordered)
		rc = rmq_setopt(*s, RMQ_RING_MAX, &ring, sizeof(ring));
	return rc;
}

static void
close_socket(rmq_ctx *ctx, rmq_socket *s)
{
	if (s != NULL)
		rmq_close(s);
	if (ctx != NULL)
		rmq_ctx_destroy(ctx);
}

/* Force the run's path; -RMQ_ENOTSUP quietly. */
static int
force_path(const struct run *r, rmq_socket *s)
{
	struct quiet q;
	int          rc;

	quiet_begin(&q);
	rc = rmq_setopt(s, RMQ_PATH, &r->path, sizeof(r->path));
	quiet_end(&q, rc != -RMQ_ENOTSUP);
	return rc;
}

/*
 * What the echo side tells the parent through the pipe, then closes it:
 * "A" and its address, "N" the provider cannot do the path, or "E" and
 * the error that stopped it.
 */
static void
tell(int fd, char kind, const char *text)
{
	if (dprintf(fd, "%c%s", kind, text) < 0)
		fprintf(stderr, "rmq_tune: echo: cannot reach the parent\n");
}

static void
tell_err(int fd, int rc)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", rc);
	tell(fd, 'E', num);
}

/*
 * The echo side: bind, force the path, say where (or why not) on fd, then
 * send every message back with its own length until told to stop.  A size
 * that cannot go back the same way is answered with mark_skip.
 */
static int
echo_side(const struct run *r, const char *ep, int fd)
{
	rmq_ctx     *ctx = NULL;
	rmq_socket  *s   = NULL;
	uint8_t     *rb = NULL, *sb = NULL;
	size_t       cap  = r->o->max_size > MARK_LEN ? r->o->max_size
	                                               : MARK_LEN;
	size_t       last = SIZE_MAX, len;
	char         addr[256];
	struct quiet q;
	ssize_t      n;
	bool         probe;
	int          rc, ret = 1;

	/* Never outlive the parent, whatever it died of. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		goto out;
	pp_pin(r->o->cpus[1]);
	rb = malloc(cap);
	sb = malloc(cap);
	if (rb == NULL || sb == NULL) {
		tell_err(fd, -RMQ_ENOMEM);
		goto out;
	}
	/* Touch every page now, not inside a timed round trip. */
	memset(rb, 0, cap);
	memset(sb, 0, cap);
	rc = open_socket(r, true, &ctx, &s);
	if (rc == 0)
		rc = rmq_bind(s, ep);
	if (rc != 0) {
		tell_err(fd, rc);
		goto out;
	}
	rc = force_path(r, s);
	if (rc == -RMQ_ENOTSUP) {
		tell(fd, 'N', "");
		ret = 0;
		goto out;
	}
	if (rc != 0) {
		tell_err(fd, rc);
		goto out;
	}
	len = sizeof(addr);
	rc  = rmq_getopt(s, RMQ_LAST_ENDPOINT, addr, &len);
	if (rc != 0) {
		tell_err(fd, rc);
		goto out;
	}
	tell(fd, 'A', addr);
	close(fd);
	fd = -1;
	for (;;) {
		n = rmq_recv(s, rb, cap, 0);
		if (n < 0) {
			fprintf(stderr, "rmq_tune: echo: recv: %s\n",
			        rmq_strerror((int) n));
			goto out;
		}
		if (n == MARK_LEN && memcmp(rb, mark_done, MARK_LEN) == 0) {
			/*
			 * The other side closes as soon as this arrives; on
			 * sockets a rendezvous reply can still be completing
			 * here and then fails with -ECONNRESET although it
			 * was received.  Either way the run is over.
			 */
			n   = rmq_send(s, mark_done, MARK_LEN, 0);
			ret = n < 0 && n != -RMQ_ECONNRESET;
			if (ret != 0)
				fprintf(stderr, "rmq_tune: echo: goodbye: "
				        "%s\n", rmq_strerror((int) n));
			goto out;
		}
		if ((size_t) n > cap) {
			fprintf(stderr, "rmq_tune: echo: %zd B: too long\n",
			        n);
			goto out;
		}
		/*
		 * Like rmq_pingpong, send from another buffer than the one
		 * received into, copied once per size: the pong's source is
		 * not what the CPU has just written.
		 */
		probe = (size_t) n != last;
		if (probe) {
			memcpy(sb, rb, (size_t) n);
			quiet_begin(&q);
		}
		rc = (int) rmq_send(s, sb, (size_t) n, 0);
		if (probe)
			quiet_end(&q, !refused(rc));
		last = (size_t) n;
		if (refused(rc)) {
			/* REP: a refused reply ends the request (reqrep.c). */
			rc   = (int) rmq_send(s, mark_skip, MARK_LEN, 0);
			last = SIZE_MAX;
		}
		if (rc < 0) {
			fprintf(stderr, "rmq_tune: echo: send %zd B: %s\n", n,
			        rmq_strerror(rc));
			goto out;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	close_socket(ctx, s);
	free(rb);
	free(sb);
	return ret;
}

/* How a child ended, for a warning. */
static const char *
status_text(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)",
		         WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "status %#x", (unsigned) status);
	return buf;
}

/* The plain socket's thresholds: what "0" and "auto" would give. */
static void
read_defaults(rmq_socket *s, struct pat_result *pr)
{
	size_t len;
	int    rc;

	len = sizeof(size_t);
	rc  = rmq_getopt(s, RMQ_INJECT_MAX, &pr->inject_cap, &len);
	len = sizeof(size_t);
	rc |= rmq_getopt(s, RMQ_EAGER_MAX, &pr->eager_dflt, &len);
	len = sizeof(size_t);
	rc |= rmq_getopt(s, RMQ_RING_MAX, &pr->ring_dflt, &len);
	len = sizeof(int);
	rc |= rmq_getopt(s, RMQ_RNDV_PATH, &pr->rndv_dflt, &len);
	pr->have_dflt = rc == 0;
}

/*
 * One cell: the first ping probes (a refusal on either side skips the
 * size), then warm-up and timed round trips, each stopping early on its
 * time budget.  Returns 0, or the error that ends the run.
 */
static int
time_size(const struct run *r, rmq_socket *s, int k, uint8_t *sb,
          uint8_t *rb, double *lat, struct cell *c)
{
	const struct opts *o      = r->o;
	int                iters  = o->iters / o->rounds;
	double             budget = o->budget_us / o->rounds;
	size_t             size = o->sizes[k];
	size_t             rcap = size > MARK_LEN ? size : MARK_LEN;
	struct quiet       q;
	double             t0, t1, start;
	ssize_t            rc;
	int                i, n = 0;

	if (iters < TUNE_MIN_ITERS)
		iters = TUNE_MIN_ITERS;
	pp_fill(sb, size, (uint64_t) k);
	quiet_begin(&q);
	rc = rmq_send(s, sb, size, 0);
	quiet_end(&q, !refused(rc));
	if (refused(rc)) {
		c->state = rc == -RMQ_EMSGSIZE ? CELL_BIG : CELL_NOTSUP;
		return 0;
	}
	if (rc >= 0)
		rc = rmq_recv(s, rb, rcap, 0);
	if (rc < 0) {
		warn_run(r, size, "first round trip", rc);
		goto fail;
	}
	if (rc == MARK_LEN && size != MARK_LEN &&
	    memcmp(rb, mark_skip, MARK_LEN) == 0) {
		c->state = CELL_BIG;
		return 0;
	}
	if ((size_t) rc != size) {
		rc = -RMQ_EPROTO;
		warn_run(r, size, "echo of another length", rc);
		goto fail;
	}
	start = pp_now_us();
	for (i = 0; i < o->warmup / o->rounds; i++) {
		if (i >= 2 && pp_now_us() - start > budget / 5)
			break;
		rc = rmq_send(s, sb, size, 0);
		if (rc >= 0)
			rc = rmq_recv(s, rb, rcap, 0);
		if (rc < 0) {
			warn_run(r, size, "warm-up", rc);
			goto fail;
		}
	}
	start = pp_now_us();
	for (n = 0; n < iters;) {
		t0 = pp_now_us();
		rc = rmq_send(s, sb, size, 0);
		if (rc >= 0)
			rc = rmq_recv(s, rb, rcap, 0);
		if (rc < 0 || (size_t) rc != size) {
			warn_run(r, size, "round trip",
			         rc < 0 ? rc : -RMQ_EPROTO);
			goto fail;
		}
		t1       = pp_now_us();
		lat[n++] = (t1 - t0) / 2;
		if (n >= TUNE_MIN_ITERS && t1 - start > budget)
			break;
	}
	qsort(lat, (size_t) n, sizeof(*lat), pp_cmp_double);
	if (c->state != CELL_OK || lat[n / 2] < c->us)
		c->us = lat[n / 2];
	c->iters += n;
	c->state  = CELL_OK;
	return 0;
fail:
	c->state = CELL_FAILED;
	return rc < 0 ? (int) rc : -RMQ_EPROTO;
}

/* Read what the echo side says, to the end (it closes its end). */
static ssize_t
read_all(int fd, char *buf, size_t len)
{
	size_t  got = 0;
	ssize_t n;

	while (got < len - 1) {
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t) n;
	}
	buf[got] = '\0';
	return (ssize_t) got;
}

/* From size index from on: the path cannot do them (or failed). */
static void
mark_rest(struct table *t, int path, int from, int nsizes, int state)
{
	int k;

	for (k = from; k < nsizes; k++)
		if (t->c[path][k].state == CELL_NONE ||
		    t->c[path][k].state == CELL_OK)
			t->c[path][k].state = state;
}

/*
 * One run: fork the echo side, connect, force the path, time every size.
 * Fills t's row for the path.  Returns 0, or 1 if the run could not start
 * at all (the provider is not here: nothing else will work either).
 */
static int
run_path(const struct run *r, struct pat_result *pr, struct table *t)
{
	static unsigned    seq;
	const struct opts *o   = r->o;
	rmq_ctx           *ctx = NULL;
	rmq_socket        *s   = NULL;
	uint8_t           *sb = NULL, *rb = NULL;
	double            *lat = NULL, t0 = pp_now_us();
	size_t             cap = o->max_size > MARK_LEN ? o->max_size
	                                                : MARK_LEN;
	size_t             len;
	char               ep[256], msg[300];
	int                pfd[2], status = 0, rc, k = 0, ret = 0, ok = 0;
	bool               clean = false; /* the echo side exits by itself */
	pid_t              pid;

	/* An earlier round left nothing to time: no need to connect. */
	for (k = 0; k < o->nsizes; k++)
		if (t->c[r->path][k].state == CELL_NONE ||
		    t->c[r->path][k].state == CELL_OK)
			break;
	if (k == o->nsizes)
		return 0;

	/* A provider of this host alone: a NAME endpoint, no TCP port. */
	if (o->row->flags & RMQ_PROV_LOCAL_ONLY)
		snprintf(ep, sizeof(ep), "%s://rmq_tune_%d_%u", o->prov,
		         (int) getpid(), seq++);
	else
		snprintf(ep, sizeof(ep), "%s://%s:0", o->prov, o->host);
	if (pipe(pfd) != 0) {
		perror("rmq_tune: pipe");
		return 1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("rmq_tune: fork");
		close(pfd[0]);
		close(pfd[1]);
		return 1;
	}
	if (pid == 0) {
		close(pfd[0]);
		_exit(echo_side(r, ep, pfd[1]));
	}
	close(pfd[1]);
	read_all(pfd[0], msg, sizeof(msg));
	close(pfd[0]);
	if (msg[0] == 'N') {
		mark_rest(t, r->path, 0, o->nsizes, CELL_NOTSUP);
		clean = true;
		goto out;
	}
	if (msg[0] != 'A') {
		clean = true;
		rc = msg[0] == 'E' ? atoi(msg + 1) : 0;
		fprintf(stderr, "rmq_tune: %s: cannot bind %s: %s\n",
		        r->pat->label, ep,
		        rc != 0 ? rmq_strerror(rc) : "the echo side died");
		ret = 1;
		goto out;
	}
	sb  = malloc(cap);
	rb  = malloc(cap);
	lat = malloc((size_t) (o->iters > TUNE_MIN_ITERS ? o->iters
	                                                 : TUNE_MIN_ITERS) *
	             sizeof(*lat));
	if (sb == NULL || rb == NULL || lat == NULL) {
		fprintf(stderr, "rmq_tune: out of memory\n");
		ret = 1;
		goto out;
	}
	memset(sb, 0, cap);
	memset(rb, 0, cap);
	rc = open_socket(r, false, &ctx, &s);
	if (rc == 0)
		rc = rmq_connect(s, msg + 1);
	if (rc != 0) {
		fprintf(stderr, "rmq_tune: %s: cannot connect to %s: %s\n",
		        r->pat->label, msg + 1, rmq_strerror(rc));
		ret = 1;
		goto out;
	}
	if (prov_name[0] == '\0') {
		len = sizeof(prov_name);
		rmq_getopt(s, RMQ_PROVIDER_NAME, prov_name, &len);
	}
	if (!pr->have_dflt && !r->ordered && r->path != RMQ_PATH_EAGER)
		read_defaults(s, pr);
	if (r->ordered && r->path == RMQ_PATH_RING) {
		/* Ring mixes by size only where the domain is ordered. */
		size_t ring = 0;

		len = sizeof(ring);
		pr->ring_bysize = rmq_getopt(s, RMQ_RING_MAX, &ring, &len) == 0
		                  && ring > 0;
	}
	rc = force_path(r, s);
	if (rc != 0) {
		/* The echo side took it: this side should have too. */
		warn_run(r, 0, "RMQ_PATH", rc);
		mark_rest(t, r->path, 0, o->nsizes, CELL_FAILED);
		goto out;
	}
	for (k = 0; k < o->nsizes; k++) {
		/* Refused or failed in an earlier round: so it stays. */
		if (t->c[r->path][k].state != CELL_NONE &&
		    t->c[r->path][k].state != CELL_OK)
			continue;
		rc = time_size(r, s, k, sb, rb, lat, &t->c[r->path][k]);
		if (rc != 0)
			break;
		ok += t->c[r->path][k].state == CELL_OK;
	}
	if (k < o->nsizes) {
		mark_rest(t, r->path, k, o->nsizes, CELL_FAILED);
		goto out;
	}
	rc = (int) rmq_send(s, mark_done, MARK_LEN, 0);
	if (rc >= 0)
		rc = (int) rmq_recv(s, rb, cap, 0);
	if (rc < 0)
		warn_run(r, o->sizes[o->nsizes - 1], "goodbye", rc);
	else
		clean = true;
out:
	close_socket(ctx, s);
	if (!clean)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (clean && ret == 0 &&
	    (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
		nwarnings++;
		fprintf(stderr, "rmq_tune: warning: %s %s%s: the echo side "
		        "ended with %s\n", r->pat->label,
		        rmq_path_name(r->path),
		        r->ordered ? " (ordered domain)" : "",
		        status_text(status, msg, sizeof(msg)));
	}
	if (ret == 0)
		fprintf(stderr, "rmq_tune: %-7s %-10s%s %2d sizes timed in "
		        "%.1f s (round %d of %d)\n", r->pat->label,
		        rmq_path_name(r->path),
		        r->ordered ? " (ordered)" : "          ", ok,
		        (pp_now_us() - t0) / 1e6, r->round + 1, o->rounds);
	free(sb);
	free(rb);
	free(lat);
	return ret;
}

/* ---- choosing the thresholds ---- */

/* On a tie: the lower path, the provider's own rendezvous, the ring last. */
static int
rank_of(const struct pat_result *pr, int path)
{
	switch (path) {
	case RMQ_PATH_INJECT:
		return 0;
	case RMQ_PATH_EAGER:
		return 1;
	case RMQ_PATH_RING:
		return 4;
	default:
		return path == pr->rndv_dflt ? 2 : 3;
	}
}

/* The fastest figure at size k, over every path on both domains. */
static double
best_at(const struct pat_result *pr, int k)
{
	double b = INFINITY;
	int    p;

	for (p = 0; p < RMQ_PATHS; p++) {
		if (pr->u.c[p][k].state == CELL_OK && pr->u.c[p][k].us < b)
			b = pr->u.c[p][k].us;
		if (pr->o.c[p][k].state == CELL_OK && pr->o.c[p][k].us < b)
			b = pr->o.c[p][k].us;
	}
	return b;
}

/* The path that wins size k in t (ring from o), ties to the lower. */
static int
fastest_at(const struct pat_result *pr, const struct table *t, int k)
{
	const struct cell *c;
	double             b = INFINITY, wus = INFINITY;
	int                i, p, win = -1;

	for (i = 0; i < NCOLUMNS; i++) {
		p = columns[i];
		c = p == RMQ_PATH_RING ? &pr->o.c[p][k] : &t->c[p][k];
		if (c->state == CELL_OK && c->us < b)
			b = c->us;
	}
	for (i = 0; i < NCOLUMNS; i++) {
		p = columns[i];
		c = p == RMQ_PATH_RING ? &pr->o.c[p][k] : &t->c[p][k];
		if (c->state != CELL_OK || c->us > b * (1 + TUNE_TOL))
			continue;
		if (win < 0 || rank_of(pr, p) < rank_of(pr, win) ||
		    (rank_of(pr, p) == rank_of(pr, win) && c->us < wus)) {
			win = p;
			wus = c->us;
		}
	}
	return win;
}

/* Cost of sizes [from,to) on path p of t; false if p cannot carry one. */
static bool
range_cost(const struct pat_result *pr, const struct table *t,
           const double *best, int p, int from, int to, double *cost)
{
	double rel;
	int    k;

	for (k = from; k < to; k++) {
		if (t->c[p][k].state != CELL_OK)
			return false;
		rel = t->c[p][k].us / best[k];
		*cost += (rel <= 1 + TUNE_TOL ? 1 : rel) +
		         TUNE_RANK_EPS * rank_of(pr, p) + TUNE_FAST_EPS * rel;
	}
	return true;
}

/*
 * The threshold that puts sizes [0,n) of the grid at or below it and the
 * rest above: the last size in, but at least lo and at least 1 (0 means
 * "the default" in the file).  False if that passes the next size.
 */
static bool
limit_value(const struct opts *o, int n, size_t lo, size_t *v)
{
	*v = n > 0 && o->sizes[n - 1] > lo ? o->sizes[n - 1] : lo;
	if (*v == 0)
		*v = 1;
	return n == o->nsizes || *v < o->sizes[n];
}

/*
 * inject_max for the first a sizes.  Inject cannot be turned off (0 in the
 * file is the provider's limit), so a size it can carry below the range
 * needs room under the next size; the limit runs up to the inject cap
 * when the next size is beyond it.
 */
static bool
inject_value(const struct opts *o, const struct pat_result *pr, int a,
             size_t *v)
{
	size_t cap = pr->inject_cap;

	if (cap == 0) {
		*v = 0;
		return a == 0;
	}
	if (a == o->nsizes || o->sizes[a] > cap) {
		*v = cap;
		return true;
	}
	return limit_value(o, a, 0, v);
}

/* Try every split for one family (with or without a ring range). */
static void
search(const struct opts *o, struct pat_result *pr, const struct table *t,
       bool ordered, const double *best, struct choice *out)
{
	const int n = o->nsizes;
	double    c_inj, c_eag, c_ring, cost;
	size_t    vi, ve, vr;
	int       a, b, c, x, rp;

	memset(out, 0, sizeof(*out));
	for (a = 0; a <= n; a++) {
		c_inj = 0;
		if (!range_cost(pr, t, best, RMQ_PATH_INJECT, 0, a, &c_inj))
			break;
		if (!inject_value(o, pr, a, &vi))
			continue;
		for (b = a; b <= n; b++) {
			c_eag = c_inj;
			if (!range_cost(pr, t, best, RMQ_PATH_EAGER, a, b,
			                &c_eag))
				break;
			if (!limit_value(o, b, vi, &ve))
				continue;
			for (c = ordered ? b + 1 : b; c <= n; c++) {
				c_ring = c_eag;
				/* The ring only ever runs ordered. */
				if (!range_cost(pr, &pr->o, best,
				                RMQ_PATH_RING, b, c, &c_ring))
					break;
				vr = 0;
				if (ordered && !limit_value(o, c, ve, &vr))
					continue;
				for (x = 0; x < NRNDV; x++) {
					rp = rndv_paths[x];
					/* None above: the provider's own. */
					if (c == n && rp != pr->rndv_dflt)
						continue;
					cost = c_ring;
					if (!range_cost(pr, t, best, rp, c, n,
					                &cost))
						continue;
					if (out->valid && cost >= out->cost)
						continue;
					out->valid      = true;
					out->ordered    = ordered;
					out->ninj       = a;
					out->neag       = b - a;
					out->nring      = c - b;
					out->rndv       = rp;
					out->inject_max = vi;
					out->eager_max  = ve;
					out->ring_max   = vr;
					out->cost       = cost;
				}
				if (!ordered)
					break; /* no ring range: c == b only */
			}
		}
	}
}

/*
 * Both families.  Without every path timed on the ordered domain, the
 * ring family is scored with the other paths' unordered figures: good
 * enough to tell whether the ring could win at all.  The ordered domain
 * changes every size, including those between grid points, and its
 * figures come from other runs than the default domain's: it must win by
 * the tolerance on average over the sizes, not by one size's noise.
 */
static void
derive(const struct opts *o, struct pat_result *pr, bool provisional)
{
	double        best[TUNE_MAX_SIZES];
	struct choice ring;
	int           k;

	for (k = 0; k < o->nsizes; k++)
		best[k] = best_at(pr, k);
	search(o, pr, &pr->u, false, best, &pr->ch);
	if (!pr->ring_bysize || (!provisional && !pr->o_full))
		return;
	search(o, pr, pr->o_full ? &pr->o : &pr->u, true, best, &ring);
	if (ring.valid && (!pr->ch.valid ||
	                   ring.cost < pr->ch.cost - TUNE_TOL * o->nsizes))
		pr->ch = ring;
}

/* The path the choice sends size k by. */
static int
chosen_at(const struct pat_result *pr, int k)
{
	const struct choice *ch = &pr->ch;

	if (k < ch->ninj)
		return RMQ_PATH_INJECT;
	if (k < ch->ninj + ch->neag)
		return RMQ_PATH_EAGER;
	if (k < ch->ninj + ch->neag + ch->nring)
		return RMQ_PATH_RING;
	return ch->rndv;
}

/* ---- measuring one pattern ---- */

static int
tune_pattern(const struct opts *o, struct pat_result *pr)
{
	struct run r = {.o = o, .pat = pr->pat};
	int        i;

	for (r.round = 0; r.round < o->rounds; r.round++)
		for (i = 0; i < NCOLUMNS; i++) {
			r.path    = columns[i];
			r.ordered = r.path == RMQ_PATH_RING;
			if (run_path(&r, pr, r.ordered ? &pr->o : &pr->u) != 0)
				return 1;
		}
	if (!pr->have_dflt) {
		fprintf(stderr, "rmq_tune: %s: no plain socket connected\n",
		        pr->pat->label);
		return 1;
	}
	derive(o, pr, true);
	if (!pr->ch.ordered)
		return 0;
	fprintf(stderr, "rmq_tune: %s: the ring could win; timing the other "
	        "paths on its ordered domain\n", pr->pat->label);
	r.ordered = true;
	for (r.round = 0; r.round < o->rounds; r.round++)
		for (i = 0; i < NCOLUMNS; i++) {
			r.path = columns[i];
			if (r.path != RMQ_PATH_RING &&
			    run_path(&r, pr, &pr->o) != 0)
				return 1;
		}
	pr->o_full = true;
	return 0;
}

/* ---- output ---- */

static const char *
cell_text(const struct cell *c, char *buf, size_t len)
{
	switch (c->state) {
	case CELL_OK:
		snprintf(buf, len, "%.2f", c->us);
		break;
	case CELL_BIG:
		snprintf(buf, len, "-");
		break;
	case CELL_NOTSUP:
		snprintf(buf, len, "n/a");
		break;
	case CELL_FAILED:
		snprintf(buf, len, "x");
		break;
	default:
		snprintf(buf, len, " ");
		break;
	}
	return buf;
}

/*
 * The table, each line after prefix.  ordered: the o table; else the u
 * table with the ring's (ordered) figures.
 */
static void
print_table(FILE *f, const char *prefix, const struct opts *o,
            const struct pat_result *pr, bool ordered)
{
	const struct table *t = ordered ? &pr->o : &pr->u;
	const struct cell  *c;
	char                buf[32], sz[32];
	int                 i, k, p, win;

	fprintf(f, "%s%s, %s domain: one-way latency p50, us\n", prefix,
	        pr->pat->label,
	        ordered ? "ordered (ring mixed in)" : "default");
	fprintf(f, "%s%8s", prefix, "size");
	for (i = 0; i < NCOLUMNS; i++)
		fprintf(f, " %10s", rmq_path_name(columns[i]));
	fprintf(f, "  %-10s %s\n", "fastest", "chosen");
	for (k = 0; k < o->nsizes; k++) {
		fprintf(f, "%s%8s", prefix,
		        fmt_size(o->sizes[k], sz, sizeof(sz)));
		for (i = 0; i < NCOLUMNS; i++) {
			p = columns[i];
			c = p == RMQ_PATH_RING ? &pr->o.c[p][k] : &t->c[p][k];
			fprintf(f, " %10s", cell_text(c, buf, sizeof(buf)));
		}
		win = fastest_at(pr, t, k);
		fprintf(f, "  %-10s %s\n", win >= 0 ? rmq_path_name(win) : "?",
		        pr->ch.valid && pr->ch.ordered == ordered
		            ? rmq_path_name(chosen_at(pr, k))
		            : "");
	}
}

static void
print_choice(FILE *f, const char *prefix, const struct pat_result *pr)
{
	const struct choice *ch = &pr->ch;
	char                 a[32], b[32], c[32];

	fmt_size(ch->inject_max, a, sizeof(a));
	fmt_size(ch->eager_max, b, sizeof(b));
	fmt_size(ch->ring_max, c, sizeof(c));
	fprintf(f, "%s%s: inject <= %s, eager <= %s, ", prefix,
	        pr->pat->label, a, b);
	if (ch->nring > 0)
		fprintf(f, "ring <= %s, ", c);
	else
		fprintf(f, "no ring, ");
	fprintf(f, "%s above\n", rmq_path_name(ch->rndv));
}

/* An empty line after prefix, without its trailing blanks. */
static void
blank(FILE *f, const char *prefix)
{
	fprintf(f, "%.*s\n", (int) strcspn(prefix, " "), prefix);
}

static void
print_tables(FILE *f, const char *prefix, const struct opts *o,
             const struct pat_result *res, int nres)
{
	int i;

	fprintf(f, "%s'-' the path cannot carry the size, 'n/a' the provider "
	        "cannot do the path,\n%s'x' it failed.  The ring is timed "
	        "on the ordered domain it needs.\n", prefix, prefix);
	for (i = 0; i < nres; i++) {
		blank(f, prefix);
		print_table(f, prefix, o, &res[i], false);
		if (res[i].o_full) {
			blank(f, prefix);
			print_table(f, prefix, o, &res[i], true);
		}
	}
	blank(f, prefix);
	for (i = 0; i < nres; i++)
		print_choice(f, prefix, &res[i]);
}

/*
 * ring_max for the file.  No ring range: 0 inherits the provider's, and
 * where that is no ring it keeps the default domain, which a non-zero
 * ring_max (even one no larger than eager_max) would make ordered.
 */
static size_t
ring_value(const struct pat_result *pr, size_t global)
{
	if (pr->ch.nring > 0)
		return pr->ch.ring_max;
	if (pr->ring_dflt == 0 && global == 0)
		return 0;
	return pr->ch.eager_max;
}

static void
put_keys(FILE *f, const char *indent, size_t inject, size_t eager,
         size_t ring, int rndv)
{
	char buf[32];

	fprintf(f, "%sinject_max: %s\n", indent,
	        fmt_size(inject, buf, sizeof(buf)));
	fprintf(f, "%seager_max: %s\n", indent,
	        fmt_size(eager, buf, sizeof(buf)));
	fprintf(f, "%sring_max: %s\n", indent,
	        fmt_size(ring, buf, sizeof(buf)));
	fprintf(f, "%srndv: %s\n", indent, rmq_path_name(rndv));
}

static void
write_yaml(FILE *f, const struct opts *o, const struct pat_result *res,
           int nres, double secs)
{
	const struct pat_result *glob = NULL;
	char                     host[256] = "?", date[64] = "?";
	uint32_t                 fv = fi_version();
	time_t                   now = time(NULL);
	struct tm                tm;
	size_t                   inject = 0, ring = 0;
	int                      i;

	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	if (localtime_r(&now, &tm) != NULL)
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %z", &tm);
	fprintf(f,
	        "# librmq thresholds measured by rmq_tune %s (rmq_tune(1)).\n"
	        "#   provider:  %s (libfabric %s)\n"
	        "#   libfabric: %u.%u\n"
	        "#   host:      %s\n"
	        "#   date:      %s\n"
	        "#   run:       CPUs %d and %d, %d sizes, up to %d timed "
	        "round trips each\n"
	        "#              in %d rounds%s, %.0f s\n"
	        "#\n"
	        "# Median one-way latency (round trip / 2) in microseconds, "
	        "each path\n"
	        "# forced on both ends; the lowest of the rounds' medians.\n",
	        rmq_version(), o->prov, prov_name, FI_MAJOR(fv), FI_MINOR(fv),
	        host, date, o->cpus[0], o->cpus[1], o->nsizes, o->iters,
	        o->rounds, o->quick ? " (--quick)" : "", secs);
	print_tables(f, "# ", o, res, nres);
	for (i = 0; i < nres; i++) {
		if (res[i].pat == &patterns[0])
			glob = &res[i];
		/* A pattern's inject_max can only lower the global one. */
		if (res[i].ch.inject_max > inject)
			inject = res[i].ch.inject_max;
	}
	if (glob != NULL)
		ring = ring_value(glob, 0);
	fprintf(f, "#\n# The global keys are PAIR's (inject_max: the largest "
	        "of the patterns', as a\n# pattern's own can only lower "
	        "it); each pattern's section has its own.\n");
	fprintf(f, "provider: %s\n", o->prov);
	fprintf(f, "thresholds:\n  tuned: true\n");
	if (glob != NULL)
		put_keys(f, "  ", inject, glob->ch.eager_max, ring,
		         glob->ch.rndv);
	for (i = 0; i < nres; i++) {
		fprintf(f, "  %s:\n", res[i].pat->key);
		put_keys(f, "    ", res[i].ch.inject_max, res[i].ch.eager_max,
		         ring_value(&res[i], ring), res[i].ch.rndv);
	}
}

/*
 * Write the file next to its destination, have the library load it, and
 * only then put it in place (or copy it to stdout): a file rmq_ctx_new()
 * would reject is never left behind.
 */
static int
emit(const struct opts *o, const char *text, size_t len)
{
	char    tmp[4096];
	rmq_ctx *ctx = NULL;
	FILE    *f   = NULL;
	mode_t   mask;
	int      fd, rc, ret = 1;

	if (o->out != NULL)
		rc = snprintf(tmp, sizeof(tmp), "%s.XXXXXX", o->out);
	else
		rc = snprintf(tmp, sizeof(tmp), "%s/rmq_tune.XXXXXX",
		              getenv("TMPDIR") != NULL ? getenv("TMPDIR")
		                                       : "/tmp");
	if (rc < 0 || (size_t) rc >= sizeof(tmp)) {
		fprintf(stderr, "rmq_tune: file name too long\n");
		return 1;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		fprintf(stderr, "rmq_tune: %s: %s\n", tmp, strerror(errno));
		return 1;
	}
	/* mkstemp() makes it 0600; a configuration file is usually 0644. */
	mask = umask(0);
	umask(mask);
	if (o->out != NULL)
		fchmod(fd, 0666 & ~mask);
	f = fdopen(fd, "w");
	if (f == NULL) {
		close(fd);
		goto out;
	}
	if (fwrite(text, 1, len, f) != len || fclose(f) != 0) {
		f = NULL;
		fprintf(stderr, "rmq_tune: %s: %s\n", tmp, strerror(errno));
		goto out;
	}
	f  = NULL;
	rc = rmq_ctx_new(&ctx, tmp);
	if (rc != 0) {
		fprintf(stderr, "rmq_tune: librmq rejects the file written: "
		        "%s\n", rmq_strerror(rc));
		goto out;
	}
	rmq_ctx_destroy(ctx);
	if (o->out == NULL) {
		ret = fwrite(text, 1, len, stdout) != len || fflush(stdout);
		goto out;
	}
	if (rename(tmp, o->out) != 0) {
		fprintf(stderr, "rmq_tune: %s: %s\n", o->out, strerror(errno));
		goto out;
	}
	tmp[0] = '\0';
	ret    = 0;
out:
	if (f != NULL)
		fclose(f);
	if (tmp[0] != '\0')
		unlink(tmp);
	return ret;
}

/* Can the file be written there?  Asked before a minute of timing. */
static int
check_out(const char *path)
{
	const char *slash = strrchr(path, '/');
	char        dir[4096];
	int         n;

	if (slash == NULL)
		n = snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		n = snprintf(dir, sizeof(dir), "/");
	else
		n = snprintf(dir, sizeof(dir), "%.*s", (int) (slash - path),
		             path);
	if (n < 0 || (size_t) n >= sizeof(dir) || path[0] == '\0' ||
	    (slash != NULL && slash[1] == '\0')) {
		fprintf(stderr, "rmq_tune: -o %s: not a file name\n", path);
		return -1;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		fprintf(stderr, "rmq_tune: -o %s: cannot write in %s: %s\n",
		        path, dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- options ---- */

static int
cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *) a, y = *(const size_t *) b;

	return (x > y) - (x < y);
}

static int
parse_patterns(const char *arg, bool *pat)
{
	char *dup, *tok, *save = NULL;
	int   i, rc = 0, n = 0;

	memset(pat, 0, NPATTERNS * sizeof(*pat));
	dup = strdup(arg);
	if (dup == NULL)
		return -1;
	for (tok = strtok_r(dup, ",", &save); tok != NULL && rc == 0;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NPATTERNS; i++)
			if (strcmp(tok, patterns[i].key) == 0)
				break;
		if (i == NPATTERNS)
			rc = -1;
		else
			pat[i] = true, n++;
	}
	free(dup);
	return rc == 0 && n > 0 ? 0 : -1;
}

static int
parse_count(const char *s, int *out)
{
	char *end;
	long  v;

	errno = 0;
	v     = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 10000000)
		return -1;
	*out = (int) v;
	return 0;
}

/* 0 to run, else the exit status. */
static int
parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"quick", no_argument, NULL, 'q'},
		{"patterns", required_argument, NULL, 'P'},
		{"cpus", required_argument, NULL, 'C'},
		{"rounds", required_argument, NULL, 'R'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const struct rmq_prov *const *rows;
	const char                   *sizes = NULL;
	int                           c, i, n, iters = 0, rounds = 0;
	char                          extra, names[128];

	while ((c = getopt_long(argc, argv, "p:o:I:S:B:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->prov = optarg;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'I':
			if (parse_count(optarg, &iters) != 0) {
				fprintf(stderr, "rmq_tune: bad -I '%s': "
				        "expected a number of iterations, 1 "
				        "or more\n", optarg);
				return 2;
			}
			break;
		case 'S':
			sizes = optarg;
			break;
		case 'R':
			if (parse_count(optarg, &rounds) != 0 ||
			    rounds > 100) {
				fprintf(stderr, "rmq_tune: bad --rounds '%s': "
				        "expected 1 to 100\n", optarg);
				return 2;
			}
			break;
		case 'B':
			o->host = optarg;
			break;
		case 'q':
			o->quick = true;
			break;
		case 'P':
			if (parse_patterns(optarg, o->pat) != 0) {
				fprintf(stderr, "rmq_tune: bad --patterns "
				        "'%s': expected pair, reqrep or "
				        "pair,reqrep\n", optarg);
				return 2;
			}
			break;
		case 'C':
			if (sscanf(optarg, "%d,%d%c", &o->cpus[0], &o->cpus[1],
			           &extra) != 2 || o->cpus[0] < 0 ||
			    o->cpus[1] < 0) {
				fprintf(stderr, "rmq_tune: bad --cpus '%s': "
				        "expected A,B\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rmq_tune: unexpected argument '%s'\n",
		        argv[optind]);
		usage(stderr);
		return 2;
	}
	if (o->prov == NULL) {
		fprintf(stderr, "rmq_tune: -p PROVIDER is required\n");
		usage(stderr);
		return 2;
	}
	for (rows = rmq_prov_all(); *rows != NULL; rows++)
		if (strcmp(o->prov, (*rows)->name) == 0)
			break;
	o->row = *rows;
	if (o->row == NULL) {
		rmq_prov_names(names, sizeof(names), ", ", " or ");
		fprintf(stderr, "rmq_tune: unknown provider '%s' (expected "
		        "%s)\n", o->prov, names);
		return 2;
	}
	if (sizes != NULL) {
		if (pp_parse_sizes(sizes, o->sizes, &o->nsizes) != 0) {
			fprintf(stderr, "rmq_tune: bad -S '%s': expected "
			        "sizes such as 0,64,4k,1m (at most %d, each "
			        "up to 1 GiB)\n", sizes, TUNE_MAX_SIZES);
			return 2;
		}
	} else {
		const size_t *g  = o->quick ? grid_quick : grid_default;
		size_t        sz = o->quick ? sizeof(grid_quick)
		                            : sizeof(grid_default);

		o->nsizes = (int) (sz / sizeof(*g));
		memcpy(o->sizes, g, (size_t) o->nsizes * sizeof(*g));
	}
	qsort(o->sizes, (size_t) o->nsizes, sizeof(o->sizes[0]), cmp_size);
	for (i = n = 0; i < o->nsizes; i++)
		if (n == 0 || o->sizes[i] != o->sizes[n - 1])
			o->sizes[n++] = o->sizes[i];
	o->nsizes   = n;
	o->max_size = o->sizes[n - 1];
	/*
	 * Small sizes run all their iterations; large ones stop on the
	 * budget, so the default run stays near a minute or two and --quick
	 * within seconds.
	 */
	o->rounds    = rounds > 0 ? rounds : o->quick ? 2 : 3;
	o->iters     = iters > 0 ? iters : o->quick ? 200 : 1200;
	o->warmup    = o->iters / 10 > 5 * o->rounds ? o->iters / 10
	                                             : 5 * o->rounds;
	o->budget_us = o->quick ? 50e3 : 300e3;
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts        o = {.host = "127.0.0.1", .cpus = {0, 1},
	                        .pat = {true, true}};
	struct pat_result *res = NULL;
	char              *text = NULL;
	size_t             len = 0;
	FILE              *mem;
	cpu_set_t          cpus;
	double             t0 = pp_now_us();
	int                i, nres = 0, rc, ret = 1;

	rc = parse_args(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	if (o.out != NULL && check_out(o.out) != 0)
		return 1;
	for (i = 0; ignored_env[i] != NULL; i++)
		if (getenv(ignored_env[i]) != NULL) {
			fprintf(stderr, "rmq_tune: ignoring %s: the defaults "
			        "are measured\n", ignored_env[i]);
			unsetenv(ignored_env[i]);
		}
	/* Its progress thread sleeps between polls otherwise. */
	setenv("FI_SOCKETS_PE_WAITTIME", "0", 0);
	/* The echo side pins itself quietly in every run: check once here. */
	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 &&
	    (o.cpus[1] >= CPU_SETSIZE || !CPU_ISSET(o.cpus[1], &cpus)))
		fprintf(stderr, "rmq_tune: CPU %d is not available: the echo "
		        "side runs unpinned\n", o.cpus[1]);
	rc = pp_pin(o.cpus[0]);
	if (rc != 0)
		fprintf(stderr, "rmq_tune: cannot pin to CPU %d: %s\n",
		        o.cpus[0], strerror(-rc));
	res = calloc(NPATTERNS, sizeof(*res));
	if (res == NULL)
		goto out;
	for (i = 0; i < NPATTERNS; i++) {
		if (!o.pat[i])
			continue;
		res[nres].pat = &patterns[i];
		if (tune_pattern(&o, &res[nres]) != 0)
			goto out;
		derive(&o, &res[nres], false);
		if (!res[nres].ch.valid) {
			fprintf(stderr, "rmq_tune: %s: no split of the sizes "
			        "works: some size no path carried\n",
			        patterns[i].label);
			goto out;
		}
		nres++;
	}
	fprintf(stderr, "\nrmq_tune: provider %s (libfabric %s)\n", o.prov,
	        prov_name);
	print_tables(stderr, "", &o, res, nres);
	mem = open_memstream(&text, &len);
	if (mem == NULL)
		goto out;
	write_yaml(mem, &o, res, nres, (pp_now_us() - t0) / 1e6);
	if (fclose(mem) != 0)
		goto out;
	if (emit(&o, text, len) != 0)
		goto out;
	fprintf(stderr, "rmq_tune: wrote %s in %.1f s%s\n",
	        o.out != NULL ? o.out : "standard output",
	        (pp_now_us() - t0) / 1e6,
	        nwarnings > 0 ? "; see the warnings above" : "");
	ret = 0;
out:
	free(text);
	free(res);
	return ret;
}
