/*
 * What librmq prints (rmq_ctx_new(3), LOGGING): at the default log level
 * only what the caller cannot learn otherwise.  An error a call returns is
 * not printed as well -- its reason goes to log level info, where RMQ_LOG,
 * the config's log key or a log function set with rmq_set_log_fn find it.
 * Each test captures its process's standard error (and its children's,
 * which inherit it) and unsets the suite's RMQ_LOG=error first.
 *
 * The goodbye: a PULL that took every message and closed first, while its
 * PUSH was not in a librmq call, costs neither side a warning; one that
 * closed with messages of the PUSH's unread makes the PUSH count them in
 * dropped and say so at warn (lib/conn/ctrl.c, INTERNALS.md 1).
 */
#include <fcntl.h>

#include "testutil.h"
#include "checkmain.h"

static const char *const provs[] = {"tcp", "shm"};
#define NPROVS ((int) (sizeof(provs) / sizeof(provs[0])))

/* Standard error, diverted into a file while a test runs. */
struct capture {
	char path[64];
	int  fd, saved;
};

static void
capture_start(struct capture *c)
{
	snprintf(c->path, sizeof(c->path), "/tmp/check_log_%d",
	         (int) getpid());
	c->fd = open(c->path, O_CREAT | O_TRUNC | O_RDWR, 0600);
	ck_assert_int_ge(c->fd, 0);
	fflush(stderr);
	c->saved = dup(2);
	ck_assert_int_ge(c->saved, 0);
	ck_assert_int_eq(dup2(c->fd, 2), 2);
}

/* What was written to standard error since capture_start, into buf. */
static void
capture_stop(struct capture *c, char *buf, size_t len)
{
	ssize_t n;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	n = pread(c->fd, buf, len - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(c->fd);
	unlink(c->path);
}

struct logged {
	int  n, level;
	char msg[512];
};

/* A log function that keeps the last message with "bind" in it. */
static void
catch_bind(int level, const char *message, void *arg)
{
	struct logged *l = arg;

	if (strstr(message, "bind") == NULL)
		return;
	l->n++;
	l->level = level;
	snprintf(l->msg, sizeof(l->msg), "%s", message);
}

/*
 * A second socket binds prov's endpoint the first one holds: the call
 * returns -RMQ_EADDRINUSE; ep gets the endpoint.
 */
static void
bind_twice(const char *prov, char *ep, size_t eplen)
{
	rmq_ctx    *ctx;
	rmq_socket *a, *b;
	char        addr[64];
	size_t      len = eplen;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PULL, &a), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PULL, &b), 0);
	ck_assert_int_eq(rmq_bind(a, bind_addr(prov, addr, sizeof(addr))), 0);
	ck_assert_int_eq(rmq_getopt(a, RMQ_LAST_ENDPOINT, ep, &len), 0);
	ck_assert_int_eq(rmq_bind(b, ep), -RMQ_EADDRINUSE);
	ck_assert_int_eq(rmq_close(b), 0);
	ck_assert_int_eq(rmq_close(a), 0);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
}

/* The endpoint's port, as the bind error names it ("127.0.0.1:PORT"). */
static const char *
port_of(const char *ep)
{
	return strrchr(ep, ':');
}

/* At the default level a bind that fails prints nothing: the caller has
 * its -RMQ_EADDRINUSE. */
START_TEST(test_bind_twice_silent)
{
	struct capture c;
	char           ep[256], err[4096];

	unsetenv("RMQ_LOG");
	capture_start(&c);
	bind_twice(provs[_i], ep, sizeof(ep));
	capture_stop(&c, err, sizeof(err));
	ck_assert_msg(err[0] == '\0', "%s: standard error: %s", provs[_i],
	              err);
}
END_TEST

/* At level info the reason is there: on standard error with RMQ_LOG=info,
 * and in a log function at RMQ_LOG_INFO (none at the default level). */
START_TEST(test_bind_twice_reason_at_info)
{
	struct capture c;
	struct logged  l = {0};
	char           ep[256], err[8192], want[300];

	setenv("RMQ_LOG", "info", 1);
	capture_start(&c);
	bind_twice(provs[_i], ep, sizeof(ep));
	capture_stop(&c, err, sizeof(err));
	snprintf(want, sizeof(want), "librmq: info: bind 127.0.0.1%s: %s",
	         port_of(ep), strerror(EADDRINUSE));
	ck_assert_msg(strstr(err, want) != NULL, "want: %s\ngot: %s", want,
	              err);

	rmq_set_log_fn(catch_bind, &l);
	bind_twice(provs[_i], ep, sizeof(ep));
	ck_assert_int_eq(l.n, 1);
	ck_assert_int_eq(l.level, RMQ_LOG_INFO);
	ck_assert_msg(strstr(l.msg, port_of(ep)) != NULL, "logged: %s",
	              l.msg);
	unsetenv("RMQ_LOG");
	l.n = 0;
	bind_twice(provs[_i], ep, sizeof(ep));
	ck_assert_int_eq(l.n, 0);
	rmq_set_log_fn(NULL, NULL);
}
END_TEST

/* ---- the goodbye ---- */

#define GB_MSGS 20000 /* messages the PUSH sends */
#define GB_SIZE 64
#define GB_HWM  1000  /* the PULL's RCVHWM (the default): sends past it
                       * wait for the PULL to take some */

/* Each message carries its number: the PULL checks order and content. */
static void
gb_fill(uint8_t *b, uint32_t i)
{
	memset(b, (int) (i & 0xff), GB_SIZE);
	memcpy(b, &i, sizeof(i));
}

struct take_arg {
	uint32_t n;  /* messages to take */
	int      go; /* a byte here: the PUSH has sent them all */
};

/* PULL: once the PUSH has sent everything, take a->n messages, each
 * checked, then return (and close). */
static int
serve_take(rmq_socket *s, void *arg)
{
	const struct take_arg *a = arg;
	uint8_t                b[GB_SIZE], want[GB_SIZE];
	ssize_t                got;
	uint32_t               i;
	int                    fails = 0;
	char                   c;

	CHILD_CHECK(fails, read(a->go, &c, 1) == 1, "no word from the PUSH");
	for (i = 0; i < a->n && fails == 0; i++) {
		got = rmq_recv(s, b, sizeof(b), 0);
		gb_fill(want, i);
		CHILD_CHECK(fails,
		            got == GB_SIZE && memcmp(b, want, GB_SIZE) == 0,
		            "message %u: %zd bytes, or not the one sent", i,
		            got);
	}
	return fails;
}

/*
 * The PUSH sends `send` messages, then a PULL (child) on prov takes `take`
 * of them and closes, while the PUSH waits outside librmq until the
 * PULL's process has ended; then the PUSH takes in its goodbye and
 * closes.  local: RMQ_LOCAL for both ("": as the config says).  err:
 * standard error of both; *dropped: the PUSH's.
 */
static void
goodbye_run(const char *prov, const char *local, uint32_t send, uint32_t take,
            char *err, size_t errlen, uint64_t *dropped)
{
	struct capture   c;
	struct rmq_stats st;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	char             addr[64], ep[256];
	uint8_t          b[GB_SIZE];
	double           until;
	size_t           len;
	struct take_arg  a = {.n = take};
	uint32_t         i;
	pid_t            pid;
	int              ev, go[2];

	unsetenv("RMQ_LOG");
	if (local[0] != '\0')
		setenv("RMQ_LOCAL", local, 1);
	capture_start(&c);
	ck_assert_int_eq(pipe(go), 0);
	a.go = go[0];
	pid  = spawn_server(RMQ_PULL, bind_addr(prov, addr, sizeof(addr)),
	                    serve_take, &a, ep, sizeof(ep));
	close(go[0]);
	open_connected(RMQ_PUSH, ep, &ctx, &s);
	for (i = 0; i < send; i++) {
		gb_fill(b, i);
		ck_assert_int_eq(rmq_send(s, b, sizeof(b), 0), GB_SIZE);
		/* All sent (or as many as its RCVHWM lets through before
		 * it takes some): the PULL may start. */
		if (i + 1 == (send < GB_HWM ? send : GB_HWM))
			ck_assert_int_eq(write(go[1], "g", 1), 1);
	}
	close(go[1]);
	/* Not in a call while the PULL closes: its goodbye is answered in
	 * the background, or its close waits out its linger. */
	ck_assert_int_eq(reap(pid), 0);
	/* The goodbye taken in: the peer left. */
	until = test_now() + 10;
	do {
		len = sizeof(ev);
		ck_assert_int_eq(rmq_getopt(s, RMQ_EVENTS, &ev, &len), 0);
		ck_assert_int_eq(rmq_stats(s, &st), 0);
		if (st.peers_lost > 0)
			break;
		usleep(1000);
	} while (test_now() < until);
	ck_assert_uint_eq(st.peers_lost, 1);
	*dropped = st.dropped;
	close_all(ctx, s);
	capture_stop(&c, err, errlen);
	unsetenv("RMQ_LOCAL");
}

static const char *const locals[] = {"", "0"};

/* The PULL took all it was sent: nothing on either side's stderr, nothing
 * dropped (the previous code warned from the PULL's close, which waited
 * its whole linger for the idle PUSH to confirm). */
START_TEST(test_goodbye_all_taken_silent)
{
	const char *prov  = provs[_i / 2], *local = locals[_i % 2];
	char        err[4096];
	uint64_t    dropped;

	goodbye_run(prov, local, GB_MSGS, GB_MSGS, err, sizeof(err),
	            &dropped);
	ck_assert_msg(err[0] == '\0', "%s RMQ_LOCAL='%s': standard error: %s",
	              prov, local, err);
	ck_assert_uint_eq(dropped, 0);
}
END_TEST

/* The PULL closed with most of them unread: the PUSH counts them in
 * dropped and says so, once, at warn. */
START_TEST(test_goodbye_untaken_reported)
{
	const char *prov  = provs[_i / 2], *local = locals[_i % 2];
	char        err[4096], want[128];
	uint64_t    dropped;

	/* Fewer than GB_HWM: all are sent before the PULL takes any. */
	goodbye_run(prov, local, 500, 100, err, sizeof(err), &dropped);
	ck_assert_msg(dropped == 400, "%s RMQ_LOCAL='%s': dropped %llu, not "
	              "400; standard error: %s", prov, local,
	              (unsigned long long) dropped, err);
	snprintf(want, sizeof(want), "closed with 400 of our messages not "
	         "taken\n");
	ck_assert_msg(strstr(err, "librmq: warning: peer ") != NULL &&
	                  strstr(err, want) != NULL,
	              "%s RMQ_LOCAL='%s': want \"...%s\", standard error: %s",
	              prov, local, want, err);
	ck_assert_ptr_null(strstr(strstr(err, want) + 1, want)); /* once */
}
END_TEST

static Suite *
log_suite(void)
{
	Suite *s  = suite_create("log");
	TCase *tc = tcase_create("returned");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_bind_twice_silent, 0, NPROVS);
	tcase_add_loop_test(tc, test_bind_twice_reason_at_info, 0, NPROVS);
	suite_add_tcase(s, tc);
	tc = tcase_create("goodbye");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_goodbye_all_taken_silent, 0, 2 * NPROVS);
	tcase_add_loop_test(tc, test_goodbye_untaken_reported, 0, 2 * NPROVS);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(log_suite)
