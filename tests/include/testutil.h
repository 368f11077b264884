/*
 * Helpers for librmq's multi-process tests: real processes, real providers.
 *
 * spawn_server() forks a child that opens its own context and socket,
 * binds, reports the bound endpoint through a pipe and runs a serve
 * function; its exit status is the number of failed checks.  Every
 * libfabric call happens after the fork, in the process that uses it.
 */
#ifndef RMQ_TESTUTIL_H
#define RMQ_TESTUTIL_H

#include <arpa/inet.h>
#include <check.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rmq.h"

#define MiB (1024u * 1024u)

typedef int (*serve_fn)(rmq_socket *s, void *arg);

/* The bind address for a provider: an ephemeral port on loopback. */
static inline const char *
bind_addr(const char *prov, char *buf, size_t len)
{
	snprintf(buf, len, "%s://127.0.0.1:0", prov);
	return buf;
}

static inline void
test_fill(uint8_t *b, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t   i;

	for (i = 0; i < n; i++) {
		if ((i & 7) == 0)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		b[i] = (uint8_t) (x >> (8 * (i & 7)));
	}
}

/* Index of the first wrong byte, or n when all are right. */
static inline size_t
test_check(const uint8_t *b, size_t n, uint64_t seed)
{
	uint8_t  tmp[4096];
	size_t   off, k, len;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (off = 0; off < n; off += sizeof(tmp)) {
		len = n - off < sizeof(tmp) ? n - off : sizeof(tmp);
		for (k = 0; k < len; k++) {
			if (((off + k) & 7) == 0)
				x = x * 6364136223846793005ull +
				    1442695040888963407ull;
			tmp[k] = (uint8_t) (x >> (8 * ((off + k) & 7)));
		}
		if (memcmp(tmp, b + off, len) != 0)
			for (k = 0; k < len; k++)
				if (tmp[k] != b[off + k])
					return off + k;
	}
	return n;
}

/* Fork a server: type, bind endpoint, serve(s, arg).  ep gets the
 * bound endpoint.  Returns the child's pid. */
static inline pid_t
spawn_server_opts(int type, const char *bind_ep, serve_fn serve, void *arg,
                  char *ep, size_t eplen, int rcvhwm, int64_t maxmsg)
{
	int   pfd[2];
	pid_t pid;

	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		rmq_ctx    *ctx;
		rmq_socket *s;
		char        buf[256];
		size_t      len = sizeof(buf);
		int         rc, fails;

		close(pfd[0]);
		alarm(120); /* never outlive a hung test */
		if (rmq_ctx_new(&ctx, NULL) != 0 ||
		    rmq_socket_open(ctx, type, &s) != 0)
			_exit(100);
		if (rcvhwm > 0)
			rmq_setopt(s, RMQ_RCVHWM, &rcvhwm, sizeof(rcvhwm));
		if (maxmsg != 0)
			rmq_setopt(s, RMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
		rc = rmq_bind(s, bind_ep);
		if (rc != 0) {
			fprintf(stderr, "server bind %s: %s\n", bind_ep,
			        rmq_strerror(rc));
			_exit(101);
		}
		rmq_getopt(s, RMQ_LAST_ENDPOINT, buf, &len);
		if (write(pfd[1], buf, len) != (ssize_t) len)
			_exit(102);
		close(pfd[1]);
		fails = serve(s, arg);
		rmq_close(s);
		rmq_ctx_destroy(ctx);
		_exit(fails > 99 ? 99 : fails);
	}
	close(pfd[1]);
	memset(ep, 0, eplen);
	ck_assert_int_gt(read(pfd[0], ep, eplen - 1), 0);
	close(pfd[0]);
	return pid;
}

static inline pid_t
spawn_server(int type, const char *bind_ep, serve_fn serve, void *arg,
             char *ep, size_t eplen)
{
	return spawn_server_opts(type, bind_ep, serve, arg, ep, eplen, 0, 0);
}

/*
 * A process killed by a signal cannot close its shm endpoint: remove the
 * region libfabric left in /dev/shm for it (librmq names them
 * rmq_<pid>_<pid namespace>_<random>) at once.  librmq's next shm process
 * would too (lib/shmname.c; check_failure's test_killed_shm_region_swept
 * waits for that instead); here /dev/shm stays clean whatever runs next.
 */
static inline void
shm_leftovers(pid_t pid)
{
	char   pat[64];
	glob_t g;
	size_t i;

	snprintf(pat, sizeof(pat), "/dev/shm/rmq_%d_*", (int) pid);
	if (glob(pat, 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++)
			unlink(g.gl_pathv[i]);
		globfree(&g);
	}
}

/* Wait for a child; returns its exit status (or 200 + signal). */
static inline int
reap(pid_t pid)
{
	int st = 0;

	if (waitpid(pid, &st, 0) != pid)
		return 255;
	if (WIFSIGNALED(st)) {
		shm_leftovers(pid);
		return 200 + WTERMSIG(st);
	}
	return WEXITSTATUS(st);
}

/*
 * Reap those of the n children in pids that have exited: st[i] is -1
 * while child i runs, then its status (200 + signal if killed).  Fails the
 * test at one that exited with a non-zero status.
 */
static inline void
children_check(const pid_t *pids, int *st, int n, const char *what)
{
	int i, w;

	for (i = 0; i < n; i++) {
		if (st[i] != -1 || waitpid(pids[i], &w, WNOHANG) != pids[i])
			continue;
		st[i] = WIFEXITED(w) ? WEXITSTATUS(w) : 200 + WTERMSIG(w);
		if (WIFSIGNALED(w))
			shm_leftovers(pids[i]);
		ck_assert_msg(st[i] == 0, "%s: child %d exited with status %d",
		              what, i, st[i]);
	}
}

/* A plain TCP connection to ep's port on loopback (to speak the control
 * protocol by hand). */
static inline int
tcp_connect_raw(const char *ep)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	const char        *colon = strrchr(ep, ':');
	int                fd    = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_ptr_nonnull(colon);
	sin.sin_port        = htons((uint16_t) atoi(colon + 1));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *) &sin, sizeof(sin)), 0);
	return fd;
}

/* Open a context and a socket of type, connected to ep. */
static inline void
open_connected(int type, const char *ep, rmq_ctx **ctx, rmq_socket **s)
{
	int rc;

	ck_assert_int_eq(rmq_ctx_new(ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(*ctx, type, s), 0);
	rc = rmq_connect(*s, ep);
	ck_assert_msg(rc == 0, "connect %s: %s", ep, rmq_strerror(rc));
}

static inline void
close_all(rmq_ctx *ctx, rmq_socket *s)
{
	ck_assert_int_eq(rmq_close(s), 0);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
}

/*
 * libfabric's name for librmq's provider prov as a socket bound on it here
 * reports it (RMQ_PROVIDER_NAME): "tcp;ofi_rxm" on 1.17, "tcp" on 2.x.
 * For tests that write a peer's HELLO by hand.
 */
static inline void
fabric_prov_name(const char *prov, char *buf, size_t len)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	char        ep[64];

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_bind(s, bind_addr(prov, ep, sizeof(ep))), 0);
	ck_assert_int_eq(rmq_getopt(s, RMQ_PROVIDER_NAME, buf, &len), 0);
	close_all(ctx, s);
}

static inline double
test_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Expected path for a size, given the thresholds the socket reports. */
static inline int
expected_path(size_t size, size_t inject_max, size_t eager_max, int rndv)
{
	if (size <= inject_max)
		return RMQ_PATH_INJECT;
	if (size <= eager_max)
		return RMQ_PATH_EAGER;
	return rndv;
}

/* The same with the ring range (0 = none) the socket reports. */
static inline int
expected_path_ring(size_t size, size_t inject_max, size_t eager_max,
                   size_t ring_max, int rndv)
{
	if (size > eager_max && size <= ring_max)
		return RMQ_PATH_RING;
	return expected_path(size, inject_max, eager_max, rndv);
}

/* The socket's ring limit (0: no ring by size). */
static inline size_t
socket_ring_max(rmq_socket *s)
{
	size_t ring = 0, len = sizeof(size_t);

	ck_assert_int_eq(rmq_getopt(s, RMQ_RING_MAX, &ring, &len), 0);
	return ring;
}

/* The socket's thresholds and rendezvous path, once it is open. */
static inline void
socket_paths(rmq_socket *s, size_t *inj, size_t *eag, int *rndv)
{
	size_t len = sizeof(size_t);

	ck_assert_int_eq(rmq_getopt(s, RMQ_INJECT_MAX, inj, &len), 0);
	len = sizeof(size_t);
	ck_assert_int_eq(rmq_getopt(s, RMQ_EAGER_MAX, eag, &len), 0);
	len = sizeof(int);
	ck_assert_int_eq(rmq_getopt(s, RMQ_RNDV_PATH, rndv, &len), 0);
}

/* ---- processes of a test's own: children, pipes, shared counters ---- */

/*
 * In a child, where ck_assert cannot be used: count a failed check in
 * fails and say where on stderr.
 */
#define CHILD_CHECK(fails, cond, ...)                                     \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "%s:%d: [%d] ", __FILE__, __LINE__, \
			        (int) getpid());                          \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
			(fails)++;                                        \
		}                                                         \
	} while (0)

typedef int (*child_fn)(void *arg);

/*
 * Fork a child that runs fn(arg) and exits with its result (0: all its
 * checks passed).  It dies with the test process and never outlives a
 * hung test by more than secs.  Fork every child before the test process
 * makes its first librmq call.
 */
static inline pid_t
spawn_child_secs(child_fn fn, void *arg, unsigned secs)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fails;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(secs);
		fails = fn(arg);
		_exit(fails > 99 ? 99 : fails);
	}
	return pid;
}

static inline pid_t
spawn_child(child_fn fn, void *arg)
{
	return spawn_child_secs(fn, arg, 120);
}

/* Memory that a test and its children share (zeroed). */
static inline void *
test_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	return p;
}

/* One int through a pipe.  pipe_get waits up to ms (-1: forever):
 * 0, or -1 on timeout, end of file or error. */
static inline int
pipe_put(int fd, int v)
{
	return write(fd, &v, sizeof(v)) == (ssize_t) sizeof(v) ? 0 : -1;
}

static inline int
pipe_get(int fd, int *v, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	return read(fd, v, sizeof(*v)) == (ssize_t) sizeof(*v) ? 0 : -1;
}

/* An endpoint through a pipe, as one record of EP_LEN bytes (atomic, so
 * several children may read the same pipe). */
#define EP_LEN 256

static inline int
pipe_put_ep(int fd, const char *ep)
{
	char rec[EP_LEN] = {0};

	snprintf(rec, sizeof(rec), "%s", ep);
	return write(fd, rec, sizeof(rec)) == (ssize_t) sizeof(rec) ? 0 : -1;
}

static inline int
pipe_get_ep(int fd, char *ep, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	if (read(fd, ep, EP_LEN) != EP_LEN)
		return -1;
	ep[EP_LEN - 1] = '\0';
	return 0;
}

/* A context and an unbound socket, for children: 0 or -error. */
static inline int
open_socket(int type, rmq_ctx **ctx, rmq_socket **s)
{
	int rc = rmq_ctx_new(ctx, NULL);

	if (rc != 0)
		return rc;
	rc = rmq_socket_open(*ctx, type, s);
	if (rc != 0)
		rmq_ctx_destroy(*ctx);
	return rc;
}

/*
 * In a child: a context and a socket of type, connected to the endpoint
 * that comes through ep_fd (pipe_put_ep) within 30 s.  0, or the status
 * for the child to exit with: 80 no endpoint came, 81 no socket, 82 the
 * connect failed (said on stderr, after who).
 */
static inline int
child_connect(int ep_fd, int type, const char *who, rmq_ctx **ctx,
              rmq_socket **s)
{
	char ep[EP_LEN];
	int  rc;

	if (pipe_get_ep(ep_fd, ep, 30000) != 0)
		return 80;
	if (open_socket(type, ctx, s) != 0)
		return 81;
	rc = rmq_connect(*s, ep);
	if (rc != 0) {
		fprintf(stderr, "%s: connect %s: %s\n", who, ep,
		        rmq_strerror(rc));
		return 82;
	}
	return 0;
}

static inline int
setopt_int(rmq_socket *s, int opt, int v)
{
	return rmq_setopt(s, opt, &v, sizeof(v));
}

static inline int
getopt_int(rmq_socket *s, int opt)
{
	int    v   = -1;
	size_t len = sizeof(v);

	return rmq_getopt(s, opt, &v, &len) == 0 ? v : -1;
}

/* CPU time this process has used, in seconds. */
static inline double
test_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/*
 * Wait until fd is readable while rmq_poll() progresses s (events 0:
 * handshakes are answered, subscriptions applied, messages land, but none
 * is taken): 0, or -1 after ms.
 */
static inline int
wait_fd_progress(rmq_socket *s, int fd, int ms)
{
	rmq_pollitem it[2];
	double       end = test_now() + ms / 1e3;
	int          rc;

	do {
		it[0] = (rmq_pollitem){.socket = s, .fd = -1, .events = 0};
		it[1] = (rmq_pollitem){.fd = fd, .events = RMQ_POLLIN};
		rc    = rmq_poll(it, 2, 100);
		if (rc < 0) {
			fprintf(stderr, "rmq_poll: %s\n", rmq_strerror(rc));
			return -1;
		}
		if (it[1].revents != 0)
			return 0;
	} while (test_now() < end);
	return -1;
}

/*
 * One int from fd, progressing s meanwhile: 0, or -1 after ms.  Several
 * processes may read the pipe: one that finds the int taken by another
 * waits in read(2) for the next.
 */
static inline int
pipe_get_progress(rmq_socket *s, int fd, int *v, int ms)
{
	if (wait_fd_progress(s, fd, ms) != 0)
		return -1;
	return read(fd, v, sizeof(*v)) == (ssize_t) sizeof(*v) ? 0 : -1;
}

/* ---- tagged streams: every sender's messages once, in its order ---- */

/*
 * A tagged message's sender and index, its bytes checked: 0, or -1 when
 * b is not a well-formed one.  Each suite has its own layout.
 */
typedef int (*tag_parse_fn)(const uint8_t *b, size_t n, uint32_t *sender,
                            uint32_t *idx);

/* What recv_in_order expects on a socket, and how long it waits. */
struct tagged_stream {
	int          nsenders, n; /* n messages from each of nsenders */
	size_t       cap;         /* the receive buffer */
	size_t       min;         /* the shortest well-formed message */
	tag_parse_fn parse;
	const char  *what;        /* failure messages start with it */
	const char  *sender;      /* and call a sender this ("publisher") */
	const pid_t *pids;        /* nkids children that must not fail */
	int         *st;          /* meanwhile (st as for children_check) */
	int          nkids;
	int          rcvtimeo_ms; /* RMQ_RCVTIMEO while waiting */
	double       quiet_s;     /* fail after this long with no message */
	uint32_t    *order;       /* the senders of the first norder */
	int          norder;      /* messages, or NULL and 0 */
};

/*
 * Receive t->n messages from each of t->nsenders on s: each (sender,
 * index) exactly once, each sender's indices in order, so none is lost,
 * repeated or overtaken.  While it waits the children in t->pids must
 * not fail, and at most t->quiet_s may pass without a message.  Returns
 * the number of times the sender changed from one message to the next.
 */
static inline int
recv_in_order(rmq_socket *s, const struct tagged_stream *t)
{
	uint8_t *b    = malloc(t->cap);
	int     *next = calloc((size_t) t->nsenders, sizeof(int));
	uint32_t snd, idx, prev = UINT32_MAX;
	ssize_t  m;
	int      i, switches = 0;
	double   quiet = test_now() + t->quiet_s;

	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(next);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVTIMEO, t->rcvtimeo_ms), 0);
	for (i = 0; i < t->nsenders * t->n;) {
		m = rmq_recv(s, b, t->cap, 0);
		if (m == -RMQ_EAGAIN && test_now() < quiet) {
			children_check(t->pids, t->st, t->nkids, t->what);
			continue;
		}
		ck_assert_msg(m >= (ssize_t) t->min,
		              "%s: recv %d of %d: %zd (%s)", t->what, i,
		              t->nsenders * t->n, m, rmq_strerror((int) m));
		ck_assert_msg(t->parse(b, (size_t) m, &snd, &idx) == 0,
		              "%s: message %d (%zd B): bad bytes", t->what, i,
		              m);
		ck_assert_msg(snd < (uint32_t) t->nsenders, "%s: %s %u",
		              t->what, t->sender, snd);
		/* In order and none lost or repeated: exactly the next one. */
		ck_assert_msg(idx == (uint32_t) next[snd],
		              "%s: %s %u: index %u, expected %d", t->what,
		              t->sender, snd, idx, next[snd]);
		next[snd]++;
		if (prev != UINT32_MAX && snd != prev)
			switches++;
		if (i < t->norder)
			t->order[i] = snd;
		prev  = snd;
		quiet = test_now() + t->quiet_s;
		i++;
	}
	for (i = 0; i < t->nsenders; i++)
		ck_assert_int_eq(next[i], t->n);
	free(next);
	free(b);
	return switches;
}

/*
 * tcase_add_loop_test, unless $RMQ_TEST_ONLY is set and not part of the
 * test's name (to run one test of a suite while debugging it).
 */
static inline void
tcase_add_loop_only(TCase *tc, const TTest *t, int from, int to)
{
	const char *only = getenv("RMQ_TEST_ONLY");

	if (only == NULL || strstr(t->name, only) != NULL)
		tcase_add_loop_test(tc, t, from, to);
}

/* A REP's plain loop: echo every request, go on after errors; never
 * returns (the test kills it). */
static inline void
echo_forever(rmq_socket *s)
{
	char    buf[256];
	ssize_t n;

	for (;;) {
		n = rmq_recv(s, buf, sizeof(buf), 0);
		if (n >= 0)
			(void) rmq_send(s, buf, (size_t) n, 0);
	}
}

/* One round trip with retries for up to ms: 0 once "x" came back. */
static inline int
round_trip_within(rmq_socket *s, const char *x, int ms)
{
	char    buf[64];
	ssize_t n;
	double  end = test_now() + ms / 1000.0;

	while (test_now() < end) {
		if (rmq_send(s, x, strlen(x), 0) < 0) {
			usleep(10000);
			continue;
		}
		n = rmq_recv(s, buf, sizeof(buf), 0);
		if (n == (ssize_t) strlen(x) && memcmp(buf, x, (size_t) n) == 0)
			return 0;
	}
	return -1;
}

#endif /* RMQ_TESTUTIL_H */
