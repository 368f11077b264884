/*
 * What librmq prints (rmq_ctx_new(3), LOGGING): at the default log level
 * only what the caller cannot learn otherwise.  An error a call returns is
 * not printed as well -- its reason goes to log level info, where RMQ_LOG,
 * the config's log key or a log function set with rmq_set_log_fn find it.
 * Each test captures its process's standard error (and its children's,
 * which inherit it) and unsets the suite's RMQ_LOG=error first.
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

static Suite *
log_suite(void)
{
	Suite *s  = suite_create("log");
	TCase *tc = tcase_create("returned");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_bind_twice_silent, 0, NPROVS);
	tcase_add_loop_test(tc, test_bind_twice_reason_at_info, 0, NPROVS);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(log_suite)
