/*
 * Roles, launch modes and the plan exchange shared by rmq_pingpong and
 * rmq_bw (see rmq_perf.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "rmq_perf.h"

const char *rmq_perf_prog = "rmq_perf";

int
rmq_perf_die(const char *what, long rc)
{
	fprintf(stderr, "%s: %s: %s\n", rmq_perf_prog, what,
	        rmq_strerror((int) rc));
	return 1;
}

void
rmq_perf_pin(int cpu)
{
	int rc = pp_pin(cpu);

	if (rc != 0)
		fprintf(stderr, "%s: cannot pin to CPU %d: %s\n", rmq_perf_prog,
		        cpu, strerror(-rc));
}

int
rmq_perf_parse_path(const char *s, int *path)
{
	int i;

	if (strcmp(s, "auto") == 0) {
		*path = -1;
		return 0;
	}
	for (i = 0; i < RMQ_PATH_COUNT; i++)
		if (strcmp(s, rmq_path_name(i)) == 0) {
			*path = i;
			return 0;
		}
	return -1;
}

int
rmq_perf_parse_rndv(const char *s, int *path)
{
	static const struct {
		const char *name;
		int         path;
	} rndv[] = {
	    {"read", RMQ_PATH_RNDV_READ},
	    {"send", RMQ_PATH_RNDV_SEND},
	    {"write", RMQ_PATH_RNDV_WRITE},
	    {"seg", RMQ_PATH_SEG},
	};
	size_t i;

	for (i = 0; i < sizeof(rndv) / sizeof(rndv[0]); i++)
		if (strcmp(s, rndv[i].name) == 0) {
			*path = rndv[i].path;
			return 0;
		}
	return -1;
}

int
rmq_perf_role_opt(struct rmq_perf_role *r, int c, const char *arg)
{
	int rc = 1;

	switch (c) {
	case 'p':
		r->prov = arg;
		break;
	case 'B':
		r->host = arg;
		break;
	case 'P':
		r->port = atoi(arg);
		break;
	case 's':
		r->server = true;
		break;
	case 'c':
		r->connect = arg;
		break;
	case 'l':
		r->local = true;
		break;
	case 'R':
		if (rmq_perf_parse_rndv(arg, &r->rndv) != 0) {
			fprintf(stderr, "%s: bad --rndv %s (read, send, write, "
			        "seg)\n", rmq_perf_prog, arg);
			rc = -1;
		}
		break;
	case 'A':
		if (rmq_perf_parse_path(arg, &r->path) != 0) {
			fprintf(stderr, "%s: bad --path %s\n", rmq_perf_prog,
			        arg);
			rc = -1;
		}
		break;
	case 'u':
		if (sscanf(arg, "%d,%d", &r->cpus[0], &r->cpus[1]) != 2) {
			fprintf(stderr, "%s: bad --cpus %s (A,B)\n",
			        rmq_perf_prog, arg);
			rc = -1;
		}
		break;
	default:
		rc = 0;
		break;
	}
	return rc;
}

const char *
rmq_perf_path_label(int path)
{
	return path >= 0 ? rmq_path_name(path) : "auto";
}

int
rmq_perf_main_path(const struct rmq_stats *a, const struct rmq_stats *b)
{
	uint64_t best = 0;
	int      i, path = -1;

	for (i = 0; i < RMQ_PATH_MAX; i++)
		if (b->sent_msgs[i] - a->sent_msgs[i] > best) {
			best = b->sent_msgs[i] - a->sent_msgs[i];
			path = i;
		}
	return path;
}

/* The errors that mean "this path cannot carry that", not "broken". */
static bool
refused(long rc)
{
	return rc == -RMQ_EMSGSIZE || rc == -RMQ_ENOTSUP;
}

int
rmq_perf_plan_send(rmq_socket *s, const struct rmq_perf_plan *p, void *buf,
                   size_t probe, int *skip)
{
	struct rmq_perf_plan a;
	const void          *msg = p;
	size_t               len = sizeof(*p);
	ssize_t              rc;

	*skip = 0;
	if (probe > len) {
		memcpy(buf, p, sizeof(*p));
		msg = buf;
		len = probe;
	}
	rc = rmq_send(s, msg, len, 0);
	if (refused(rc)) {
		/* Nothing left: the other side still waits for a plan. */
		*skip = (int) rc;
		return 0;
	}
	if (rc >= 0)
		rc = rmq_recv(s, &a, sizeof(a), 0);
	if (rc < 0)
		return (int) rc;
	if ((size_t) rc < sizeof(a) || a.magic != p->magic)
		return -RMQ_EPROTO;
	if (a.cmd & RMQ_PERF_CMD_SKIP)
		*skip = -(int) a.size;
	return 0;
}

int
rmq_perf_plan_recv(rmq_socket *s, uint32_t magic, struct rmq_perf_plan *p)
{
	ssize_t rc;

	/* Copies the plan and drops the padding (rmq_recv truncates). */
	rc = rmq_recv(s, p, sizeof(*p), 0);
	if (rc < 0)
		return (int) rc;
	if ((size_t) rc < sizeof(*p) || p->magic != magic) {
		fprintf(stderr, "%s: bad plan message\n", rmq_perf_prog);
		return -RMQ_EPROTO;
	}
	return 0;
}

int
rmq_perf_plan_ack(rmq_socket *s, const struct rmq_perf_plan *p, void *buf,
                  int *skip)
{
	struct rmq_perf_plan a   = *p;
	const void          *msg = &a;
	size_t               len = sizeof(a), plen = sizeof(int);
	int                  cur = -1;
	ssize_t              rc  = 0;

	*skip = 0;
	if (p->path != RMQ_PERF_PATH_UNSET &&
	    (rmq_getopt(s, RMQ_PATH, &cur, &plen) != 0 || cur != p->path)) {
		cur = p->path;
		rc  = rmq_setopt(s, RMQ_PATH, &cur, sizeof(cur));
	}
	if (rc == 0 && p->reply > len) {
		memcpy(buf, &a, sizeof(a));
		msg = buf;
		len = p->reply;
	}
	if (rc == 0)
		rc = rmq_send(s, msg, len, 0);
	if (!refused(rc))
		return rc < 0 ? (int) rc : 0;
	/*
	 * The path cannot come back with that much (or not at all here): say
	 * so in a plain ack.  The engine restored the old path on a refused
	 * setopt, and a message this small fits any path that exists.
	 */
	*skip  = (int) rc;
	a.cmd |= RMQ_PERF_CMD_SKIP;
	a.size = (uint64_t) -rc;
	rc     = rmq_send(s, &a, sizeof(a), 0);
	return rc < 0 ? (int) rc : 0;
}

/* What follow() calls per size: one of the two kinds of rounds. */
struct follow_fn {
	rmq_perf_rounds_fn      plain;
	rmq_perf_side_rounds_fn side;
	struct rmq_perf_side   *arg;
};

static int
follow(rmq_socket *s, uint32_t magic, const struct follow_fn *fn)
{
	struct rmq_perf_plan p;
	uint8_t             *rbuf = NULL, *sbuf = NULL;
	size_t               cap = 0, need;
	int                  rc, skip;

	for (;;) {
		rc = rmq_perf_plan_recv(s, magic, &p);
		if (rc < 0) {
			rc = rmq_perf_die("recv plan", rc);
			break;
		}
		if ((p.cmd & 0xff) == RMQ_PERF_CMD_DONE) {
			rc = rmq_perf_plan_ack(s, &p, NULL, &skip);
			if (rc < 0)
				rc = rmq_perf_die("send ack", rc);
			break;
		}
		need = p.size > p.reply ? p.size : p.reply;
		if (need < sizeof(p))
			need = sizeof(p);
		if (need > cap) {
			free(rbuf);
			free(sbuf);
			cap  = need;
			rbuf = aligned_alloc(4096, (cap + 4095) & ~(size_t) 4095);
			sbuf = calloc(1, cap);
			if (rbuf == NULL || sbuf == NULL) {
				rc = rmq_perf_die("malloc", -ENOMEM);
				break;
			}
			memset(rbuf, 0, cap);
		}
		rc = rmq_perf_plan_ack(s, &p, sbuf, &skip);
		if (rc < 0) {
			rc = rmq_perf_die("send ack", rc);
			break;
		}
		if (skip != 0)
			continue;
		rc = fn->plain != NULL ? fn->plain(s, &p, rbuf, sbuf)
		                       : fn->side(fn->arg, &p, rbuf, sbuf);
		if (rc != 0)
			break;
	}
	free(rbuf);
	free(sbuf);
	return rc;
}

int
rmq_perf_follow(rmq_socket *s, uint32_t magic, rmq_perf_rounds_fn rounds)
{
	const struct follow_fn fn = {.plain = rounds};

	return follow(s, magic, &fn);
}

int
rmq_perf_follow_side(struct rmq_perf_side *side, uint32_t magic,
                     rmq_perf_side_rounds_fn rounds)
{
	const struct follow_fn fn = {.side = rounds, .arg = side};

	return follow(side->s, magic, &fn);
}

int
rmq_perf_wait_in(rmq_socket *s, rmq_socket *also, long timeout_ms)
{
	rmq_pollitem it[2] = {{.socket = s, .events = RMQ_POLLIN},
	                      {.socket = also, .events = 0}};
	int          rc;

	do
		rc = rmq_poll(it, also != NULL ? 2 : 1, timeout_ms);
	while (rc > 0 && !(it[0].revents & RMQ_POLLIN));
	if (rc == 0)
		rc = -RMQ_EAGAIN;
	return rc < 0 ? rc : 0;
}

const char *
rmq_perf_type_name(int type)
{
	switch (type) {
	case RMQ_PAIR:
		return "PAIR";
	case RMQ_PUB:
		return "PUB";
	case RMQ_SUB:
		return "SUB";
	case RMQ_REQ:
		return "REQ";
	case RMQ_REP:
		return "REP";
	case RMQ_PUSH:
		return "PUSH";
	case RMQ_PULL:
		return "PULL";
	case RMQ_DEALER:
		return "DEALER";
	case RMQ_ROUTER:
		return "ROUTER";
	default:
		return "?";
	}
}

/*
 * The data sockets' hand-shake on the control pair: the measuring side's
 * endpoint one way, "connected" the other (rmq_perf.h).
 */
#define DATA_MAGIC 0x41544144u /* "DATA" */

struct data_msg {
	uint32_t magic;
	int32_t  err;     /* the other side: 0, or why it could not connect */
	char     ep[248]; /* the measuring side: its data endpoint */
};

/* Options both data sockets get; the SUB subscribes before it connects. */
static int
data_socket(const struct rmq_perf_role *r, rmq_ctx *ctx, int type,
            rmq_socket **out)
{
	rmq_socket *s;
	int         rc, one = 1, linger = 5000, cto = 30000;

	rc = rmq_socket_open(ctx, type, &s);
	if (rc != 0)
		return rc;
	*out = s;
	rmq_setopt(s, RMQ_LINGER, &linger, sizeof(linger));
	rmq_setopt(s, RMQ_CONNECT_TIMEOUT, &cto, sizeof(cto));
	if (r->rndv != 0)
		rc = rmq_setopt(s, RMQ_RNDV_PATH, &r->rndv, sizeof(r->rndv));
	/* A benchmark counts every message: a PUB waits, never drops. */
	if (rc == 0 && type == RMQ_PUB)
		rc = rmq_setopt(s, RMQ_NODROP, &one, sizeof(one));
	if (rc == 0 && type == RMQ_SUB)
		rc = rmq_setopt(s, RMQ_SUBSCRIBE, "", 0);
	return rc;
}

/* Set the forced path on a data socket, after bind/connect. */
static void
data_path(const struct rmq_perf_role *r, rmq_socket *d, bool measuring,
          int other, struct rmq_perf_side *side)
{
	int rc;

	if (r->path == RMQ_PERF_PATH_UNSET)
		return;
	rc = rmq_setopt(d, RMQ_PATH, &r->path, sizeof(r->path));
	if (rc != 0 && measuring && side->path_err == 0)
		side->path_err = rc;
	else if (rc != 0 && !measuring && !r->quiet)
		fprintf(stderr, "%s: --path %s on the %s: %s\n", rmq_perf_prog,
		        rmq_perf_path_label(r->path),
		        rmq_perf_type_name(other), rmq_strerror(rc));
}

/* Measuring side: bind a socket of type[0] in *d, tell, wait until the
 * other side's (type[1]) is connected. */
static int
data_bind(const struct rmq_perf_role *r, const int type[2], rmq_ctx *ctx,
          rmq_socket *ctl, struct rmq_perf_side *side, rmq_socket **d)
{
	struct data_msg m = {.magic = DATA_MAGIC};
	char            ep[256];
	size_t          len = sizeof(m.ep);
	ssize_t         rc;

	rc = data_socket(r, ctx, type[0], d);
	if (rc != 0)
		return rmq_perf_die("data socket", rc);
	snprintf(ep, sizeof(ep), "%s://%s:0", r->prov, r->host);
	rc = rmq_bind(*d, ep);
	if (rc != 0)
		return rmq_perf_die("bind data socket", rc);
	data_path(r, *d, true, type[1], side);
	rc = rmq_getopt(*d, RMQ_LAST_ENDPOINT, m.ep, &len);
	if (rc == 0)
		rc = rmq_send(ctl, &m, sizeof(m), 0);
	/* The data socket answers the other side's handshake meanwhile. */
	if (rc >= 0)
		rc = rmq_perf_wait_in(ctl, *d, -1);
	if (rc >= 0)
		rc = rmq_recv(ctl, &m, sizeof(m), 0);
	if (rc < 0)
		return rmq_perf_die("data hand-shake", rc);
	if ((size_t) rc != sizeof(m) || m.magic != DATA_MAGIC)
		return rmq_perf_die("data hand-shake", -RMQ_EPROTO);
	if (m.err != 0) {
		fprintf(stderr, "%s: the %s could not connect: %s\n",
		        rmq_perf_prog, rmq_perf_type_name(type[1]),
		        rmq_strerror(m.err));
		return 1;
	}
	return 0;
}

/* Other side: take the endpoint, connect a socket of type[1] in *d, say
 * so (or why not). */
static int
data_connect(const struct rmq_perf_role *r, const int type[2], rmq_ctx *ctx,
             rmq_socket *ctl, struct rmq_perf_side *side, rmq_socket **d)
{
	struct data_msg m;
	ssize_t         rc;
	int             err;

	rc = rmq_recv(ctl, &m, sizeof(m), 0);
	if (rc < 0)
		return rmq_perf_die("data hand-shake", rc);
	if ((size_t) rc != sizeof(m) || m.magic != DATA_MAGIC)
		return rmq_perf_die("data hand-shake", -RMQ_EPROTO);
	m.ep[sizeof(m.ep) - 1] = '\0';
	err = data_socket(r, ctx, type[1], d);
	if (err == 0)
		err = rmq_connect(*d, m.ep);
	if (err == 0)
		data_path(r, *d, false, type[1], side);
	m.err = err;
	rc    = rmq_send(ctl, &m, sizeof(m), 0);
	if (err != 0)
		return rmq_perf_die("data socket", err);
	return rc < 0 ? rmq_perf_die("data hand-shake", rc) : 0;
}

/* A data pair of type[2]: the measuring side binds, the other connects. */
static int
data_open(const struct rmq_perf_role *r, const int type[2], bool measuring,
          rmq_ctx *ctx, rmq_socket *ctl, struct rmq_perf_side *side,
          rmq_socket **d)
{
	return measuring ? data_bind(r, type, ctx, ctl, side, d)
	                 : data_connect(r, type, ctx, ctl, side, d);
}

/* One side of the run.  notify_fd: where a port-0 bind tells its address. */
static int
run(const struct rmq_perf_role *r, const char *endpoint, bool do_bind,
    bool measuring, int notify_fd, const char *what, rmq_perf_fn fn,
    void *arg)
{
	struct rmq_perf_side side = {.what = what};
	rmq_ctx             *ctx  = NULL;
	rmq_socket          *s    = NULL;
	char                 ep[256];
	size_t               len = sizeof(ep);
	int                  rc, ret = 1, type, linger = 5000, cto = 30000;

	rc = rmq_ctx_new(&ctx, NULL);
	if (rc != 0)
		return rmq_perf_die("rmq_ctx_new", rc);
	type = r->reqrep ? (measuring ? RMQ_REQ : RMQ_REP) : RMQ_PAIR;
	rc   = rmq_socket_open(ctx, type, &s);
	if (rc != 0) {
		rmq_perf_die("rmq_socket_open", rc);
		goto out;
	}
	rmq_setopt(s, RMQ_LINGER, &linger, sizeof(linger));
	if (r->rndv != 0 &&
	    (rc = rmq_setopt(s, RMQ_RNDV_PATH, &r->rndv, sizeof(r->rndv))) != 0) {
		rmq_perf_die("--rndv", rc);
		goto out;
	}
	rmq_setopt(s, RMQ_CONNECT_TIMEOUT, &cto, sizeof(cto));
	rc = do_bind ? rmq_bind(s, endpoint) : rmq_connect(s, endpoint);
	if (rc != 0) {
		rmq_perf_die(do_bind ? "bind" : "connect", rc);
		goto out;
	}
	/*
	 * The forced path goes on after bind/connect, where the engine checks
	 * it at once: a provider that cannot do it leaves the socket as it
	 * was and connected, so the run can report every size as skipped
	 * instead of failing to start.
	 */
	if (r->path != RMQ_PERF_PATH_UNSET) {
		rc = rmq_setopt(s, RMQ_PATH, &r->path, sizeof(r->path));
		if (rc != 0 && measuring)
			side.path_err = rc;
		else if (rc != 0 && !r->quiet)
			fprintf(stderr, "%s: --path %s: %s\n", rmq_perf_prog,
			        rmq_perf_path_label(r->path), rmq_strerror(rc));
	}
	if (do_bind && notify_fd >= 0) {
		rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len);
		if (write(notify_fd, ep, len) != (ssize_t) len)
			goto out;
		close(notify_fd);
	} else if (do_bind && !r->quiet && measuring) {
		rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len);
		fprintf(stderr, "%s: listening on %s\n", rmq_perf_prog, ep);
	}
	if (r->data && (data_open(r, r->data_type, measuring, ctx, s, &side,
	                          &side.data) != 0 ||
	                (r->data2 && data_open(r, r->data2_type, measuring, ctx,
	                                       s, &side, &side.data2) != 0)))
		goto out;
	side.s = s;
	ret    = fn(&side, arg);
out:
	if (side.data2 != NULL)
		rmq_close(side.data2);
	if (side.data != NULL)
		rmq_close(side.data);
	if (s != NULL)
		rmq_close(s);
	rmq_ctx_destroy(ctx);
	return ret;
}

/* Fork the other side, pinned, let it bind to a free port, connect. */
static int
run_local(const struct rmq_perf_role *r, rmq_perf_fn measure,
          rmq_perf_fn other, void *arg)
{
	char  ep[256] = "", addr[128], what[64];
	int   pfd[2], status = 0, ret;
	pid_t pid;

	if (pipe(pfd) != 0)
		return rmq_perf_die("pipe", -errno);
	snprintf(addr, sizeof(addr), "%s://127.0.0.1:0", r->prov);
	pid = fork();
	if (pid < 0)
		return rmq_perf_die("fork", -errno);
	if (pid == 0) {
		close(pfd[0]);
		rmq_perf_pin(r->cpus[1]);
		_exit(run(r, addr, true, false, pfd[1], "", other, arg));
	}
	close(pfd[1]);
	rmq_perf_pin(r->cpus[0]);
	if (read(pfd[0], ep, sizeof(ep) - 1) <= 0) {
		close(pfd[0]);
		waitpid(pid, &status, 0);
		fprintf(stderr, "%s: the other side failed to bind\n",
		        rmq_perf_prog);
		return 1;
	}
	close(pfd[0]);
	snprintf(what, sizeof(what), "local, cpus %d,%d", r->cpus[0],
	         r->cpus[1]);
	ret = run(r, ep, false, true, -1, what, measure, arg);
	if (ret != 0)
		kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		ret = 1;
	return ret;
}

int
rmq_perf_run(const struct rmq_perf_role *r, rmq_perf_fn measure,
             rmq_perf_fn other, void *arg)
{
	char ep[256];
	int  rank, size;

	if (r->local)
		return run_local(r, measure, other, arg);
	if (r->server) {
		snprintf(ep, sizeof(ep), "%s://%s:%d", r->prov, r->host,
		         r->port < 0 ? 25555 : r->port);
		return run(r, ep, true, false, -1, "", other, arg);
	}
	if (r->connect != NULL) {
		snprintf(ep, sizeof(ep), "%s://%s", r->prov, r->connect);
		return run(r, ep, false, true, -1, "standalone", measure, arg);
	}
	pp_mpi_rank(&rank, &size);
	if (rank < 0)
		return 2;
	if (size != 2) {
		fprintf(stderr, "%s: run with exactly 2 ranks (%d)\n",
		        rmq_perf_prog, size);
		return 2;
	}
	snprintf(ep, sizeof(ep), "%s://%s:%d", r->prov, r->host,
	         r->port < 0 ? pp_job_port(r->salt) : r->port);
	return run(r, ep, rank == 0, rank == 0, -1, "mpirun, 2 ranks",
	           rank == 0 ? measure : other, arg);
}
