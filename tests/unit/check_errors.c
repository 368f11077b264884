/*
 * Error codes: librmq's own never collide with an errno or a libfabric
 * code, and rmq_strerror() names all three families -- checked against
 * every FI_E* of the installed fi_errno.h (fi_errnos.h is generated from
 * it at build time by fi_errnos.py).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "checkmain.h"
#include "fi_errnos.h"
#include "rmq.h"

static const int own[] = {
	RMQ_ECLOSED,  RMQ_EFSM,    RMQ_EPROTO, RMQ_EVERSION,
	RMQ_EPROVIDER, RMQ_EPATTERN, RMQ_ECONFIG, RMQ_EADDR,
	RMQ_ETRUNC,   RMQ_EPEERFULL, RMQ_ERESOLVE, RMQ_EAUTH,
};
#define NOWN ((int) (sizeof(own) / sizeof(own[0])))

/* Every FI_E* is described as libfabric describes it. */
START_TEST(test_strerror_every_fi_code)
{
	int n = 0;

#define X(code)                                                             \
	ck_assert_msg(strcmp(rmq_strerror(-(code)), fi_strerror(code)) == 0,  \
	              "%s (%d): rmq_strerror says '%s', fi_strerror '%s'",   \
	              #code, code, rmq_strerror(-(code)), fi_strerror(code)); \
	ck_assert_str_eq(rmq_strerror(code), rmq_strerror(-(code)));         \
	n++;
	FI_ERRNOS(X)
#undef X
	ck_assert_int_ge(n, 20);
}
END_TEST

/* No librmq code equals an FI_E* code (nor lies in errno's range). */
START_TEST(test_own_codes_apart)
{
	int i;

	for (i = 0; i < NOWN; i++) {
		ck_assert_int_ge(own[i], RMQ_ERRNO_BASE);
		ck_assert_int_lt(own[i], RMQ_ERR_MAX);
		ck_assert_int_gt(own[i], 4095); /* MAX_ERRNO on Linux */
#define X(code) ck_assert_int_ne(own[i], code);
		FI_ERRNOS(X)
#undef X
		ck_assert_int_ge(own[i], FI_ERRNO_MAX);
	}
	ck_assert_int_eq(RMQ_ERR_MAX - RMQ_ECLOSED, NOWN);
}
END_TEST

/* Each of ours has its own text, not libfabric's nor strerror's. */
START_TEST(test_own_texts)
{
	const char *t;
	int         i, j;

	for (i = 0; i < NOWN; i++) {
		t = rmq_strerror(-own[i]);
		ck_assert_str_ne(t, "unknown librmq error");
		ck_assert_str_ne(t, fi_strerror(own[i]));
		for (j = 0; j < i; j++)
			ck_assert_str_ne(t, rmq_strerror(own[j]));
	}
	/* what used to collide: FI_ETRUNC was 265 = RMQ_EPEERFULL */
	ck_assert_str_eq(rmq_strerror(-FI_ETRUNC), fi_strerror(FI_ETRUNC));
	ck_assert_str_eq(rmq_strerror(-FI_EOTHER), fi_strerror(FI_EOTHER));
	ck_assert_str_eq(rmq_strerror(RMQ_ERR_MAX), "unknown librmq error");
}
END_TEST

/* errno values as strerror(3) gives them; 0 is success. */
START_TEST(test_errno_texts)
{
	static const int e[] = {EAGAIN, EINVAL, ENOMEM, EMSGSIZE, ENOTSUP,
	                        ECONNRESET, ENOTCONN, ETIMEDOUT, ENODEV};
	size_t           i;

	for (i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		ck_assert_str_eq(rmq_strerror(-e[i]), strerror(e[i]));
	ck_assert_str_eq(rmq_strerror(0), "success");
	ck_assert_int_eq(RMQ_EAGAIN, FI_EAGAIN);
	ck_assert_int_eq(RMQ_ECONNREFUSED, FI_ECONNREFUSED);
}
END_TEST

/* ---- logging: a callback, its level, and off ---- */

struct logged {
	int  n, level;
	char msg[256];
};

static void
catch_log(int level, const char *message, void *arg)
{
	struct logged *l = arg;

	l->n++;
	l->level = level;
	snprintf(l->msg, sizeof(l->msg), "%s", message);
}

/* A socket type that does not exist: rmq_socket_open returns -RMQ_EINVAL,
 * and says why at level info only -- to the callback, with its level and
 * text, once RMQ_LOG=info; not at the default level, nor with off. */
START_TEST(test_log_fn_and_off)
{
	struct logged l = {0};
	rmq_ctx      *ctx;
	rmq_socket   *s;

	rmq_set_log_fn(catch_log, &l);
	unsetenv("RMQ_LOG");
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, 99, &s), -RMQ_EINVAL);
	ck_assert_int_eq(l.n, 0); /* returned, not printed */
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);

	setenv("RMQ_LOG", "info", 1);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	l.n = 0;
	ck_assert_int_eq(rmq_socket_open(ctx, 99, &s), -RMQ_EINVAL);
	ck_assert_int_eq(l.n, 1);
	ck_assert_int_eq(l.level, RMQ_LOG_INFO);
	ck_assert_msg(strstr(l.msg, "socket type 99") != NULL, "logged: %s",
	              l.msg);
	ck_assert_ptr_null(strchr(l.msg, '\n'));
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);

	setenv("RMQ_LOG", "off", 1);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	l.n = 0;
	ck_assert_int_eq(rmq_socket_open(ctx, 99, &s), -RMQ_EINVAL);
	ck_assert_int_eq(l.n, 0); /* nothing */
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
	unsetenv("RMQ_LOG");
	rmq_set_log_fn(NULL, NULL);
}
END_TEST

static Suite *
errors_suite(void)
{
	Suite *s  = suite_create("errors");
	TCase *tc = tcase_create("unit");

	tcase_add_test(tc, test_strerror_every_fi_code);
	tcase_add_test(tc, test_own_codes_apart);
	tcase_add_test(tc, test_own_texts);
	tcase_add_test(tc, test_errno_texts);
	tcase_add_test(tc, test_log_fn_and_off);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(errors_suite)
