/*
 * Unit tests for lib/progress.c, the reactor, without a fabric: file
 * descriptors as sources, timers, the one wait helper, and the wait over
 * several reactors and foreign descriptors that rmq_poll stands on.
 * Pipes stand in for control channels.  No timing is asserted: a wait
 * either returns because its condition held, or -RMQ_EAGAIN once its
 * deadline passed.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "checkmain.h"

#include <check.h>

#include "progress.h"
#include "rmq.h"
#include "util.h"

struct pipe_src {
	struct rmq_source src;
	int               wfd;
	int               ready;   /* times its callback ran */
	char              last;
	struct rmq_reactor *r;
	struct pipe_src   *victim; /* removed by this one's callback */
};

static void
pipe_open(struct pipe_src *p, struct rmq_reactor *r)
{
	int fds[2];

	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
	p->wfd = fds[1];
	p->r   = r;
	p->src.fd  = fds[0];
	p->src.idx = -1;
}

static void
pipe_close(struct pipe_src *p)
{
	close(p->src.fd);
	close(p->wfd);
}

static void
on_ready(struct rmq_source *src, short revents, void *owner)
{
	struct pipe_src *p = rmq_container_of(src, struct pipe_src, src);

	ck_assert(revents & POLLIN);
	ck_assert_ptr_eq(owner, p->r->owner);
	while (read(src->fd, &p->last, 1) == 1)
		;
	p->ready++;
	if (p->victim != NULL)
		rmq_source_remove(p->r, &p->victim->src);
}

static int
has_run(void *arg)
{
	return *(int *) arg > 0;
}

static int
never(void *arg)
{
	RMQ_UNUSED(arg);
	return 0;
}

static int
fails(void *arg)
{
	RMQ_UNUSED(arg);
	return -RMQ_ECONNRESET;
}

static int owner_token;

static void
reactor(struct rmq_reactor *r)
{
	rmq_reactor_init(r, &owner_token);
	r->spin_us = 0; /* go to sleep at once: the sources get polled */
}

/* A readable source's callback runs inside a wait, with the owner. */
START_TEST(test_source_wakes_wait)
{
	struct rmq_reactor r;
	struct rmq_waiter  w;
	struct pipe_src    p;

	reactor(&r);
	pipe_open(&p, &r);
	ck_assert_int_eq(rmq_source_add(&r, &p.src, p.src.fd, on_ready), 0);
	ck_assert_int_eq(write(p.wfd, "x", 1), 1);
	rmq_waiter_init(&w, 10000);
	ck_assert_int_eq(rmq_wait_until(&r, &w, 0, has_run, &p.ready), 0);
	ck_assert_int_eq(p.ready, 1);
	ck_assert_int_eq(p.last, 'x');
	/* removed: a write no longer reaches it; the wait times out */
	rmq_source_remove(&r, &p.src);
	ck_assert_int_eq(p.src.idx, -1);
	rmq_source_remove(&r, &p.src); /* twice is harmless */
	ck_assert_int_eq(write(p.wfd, "y", 1), 1);
	rmq_waiter_init(&w, 20);
	ck_assert_int_eq(rmq_wait_until(&r, &w, 0, never, NULL), -RMQ_EAGAIN);
	ck_assert_int_eq(p.ready, 1);
	pipe_close(&p);
	rmq_reactor_fini(&r);
}
END_TEST

/* A callback may remove another source that is ready in the same round:
 * that one is not called. */
START_TEST(test_source_removed_while_dispatching)
{
	struct rmq_reactor r;
	struct rmq_waiter  w;
	struct pipe_src    a, b;

	reactor(&r);
	pipe_open(&a, &r);
	pipe_open(&b, &r);
	ck_assert_int_eq(rmq_source_add(&r, &a.src, a.src.fd, on_ready), 0);
	ck_assert_int_eq(rmq_source_add(&r, &b.src, b.src.fd, on_ready), 0);
	a.victim = &b;
	ck_assert_int_eq(write(a.wfd, "a", 1), 1);
	ck_assert_int_eq(write(b.wfd, "b", 1), 1);
	rmq_waiter_init(&w, 10000);
	ck_assert_int_eq(rmq_wait_until(&r, &w, 0, has_run, &a.ready), 0);
	ck_assert_int_eq(a.ready, 1);
	ck_assert_int_eq(b.ready, 0);
	ck_assert_int_eq(r.nsrcs, 1); /* compacted after the round */
	ck_assert_ptr_eq(r.srcs[0], &a.src);
	pipe_close(&a);
	pipe_close(&b);
	rmq_reactor_fini(&r);
}
END_TEST

/* Many sources: the table grows, each gets its own callback. */
START_TEST(test_many_sources)
{
	enum { N = 100 };
	static struct pipe_src p[N];
	struct rmq_reactor     r;
	struct rmq_waiter      w;
	int                    i, total;

	reactor(&r);
	for (i = 0; i < N; i++) {
		pipe_open(&p[i], &r);
		ck_assert_int_eq(rmq_source_add(&r, &p[i].src, p[i].src.fd,
		                                on_ready),
		                 0);
	}
	ck_assert_int_eq(write(p[N - 1].wfd, "z", 1), 1);
	ck_assert_int_eq(write(p[7].wfd, "7", 1), 1);
	rmq_waiter_init(&w, 10000);
	ck_assert_int_eq(rmq_wait_until(&r, &w, 0, has_run, &p[N - 1].ready),
	                 0);
	for (i = 0, total = 0; i < N; i++)
		total += p[i].ready;
	ck_assert_int_eq(p[7].ready, 1);
	ck_assert_int_eq(total, 2);
	for (i = 0; i < N; i++)
		pipe_close(&p[i]);
	rmq_reactor_fini(&r);
}
END_TEST

struct tick {
	struct rmq_timer t;
	int              runs;
	bool             remove_self;
	struct rmq_reactor *r;
};

static void
on_tick(struct rmq_timer *t, int64_t now, void *owner)
{
	struct tick *k = rmq_container_of(t, struct tick, t);

	ck_assert_int_gt(now, 0);
	ck_assert_ptr_eq(owner, &owner_token);
	k->runs++;
	if (k->remove_self)
		rmq_timer_remove(k->r, t);
}

/* Timers run at every poll round; one may remove itself. */
START_TEST(test_timers)
{
	struct rmq_reactor r;
	struct rmq_waiter  w;
	struct tick        a = {0}, b = {0};

	reactor(&r);
	a.r = b.r = &r;
	rmq_timer_add(&r, &a.t, on_tick);
	rmq_timer_add(&r, &b.t, on_tick);
	b.remove_self = true;
	rmq_waiter_init(&w, 10000);
	ck_assert_int_eq(rmq_wait_until(&r, &w, 0, has_run, &a.runs), 0);
	ck_assert_int_eq(b.runs, 1);
	ck_assert_ptr_eq(r.timers, &a.t); /* b is off the list */
	ck_assert_ptr_null(a.t.next);
	/* a deadline in the past must not turn the sleep into a spin that
	 * never lets the waiter's deadline pass */
	a.t.when = 1;
	rmq_waiter_init(&w, 50);
	ck_assert_int_eq(rmq_wait_until(&r, &w, 0, never, NULL), -RMQ_EAGAIN);
	ck_assert_int_gt(a.runs, 1);
	ck_assert_int_eq(b.runs, 1);
	rmq_timer_remove(&r, &a.t);
	ck_assert_ptr_null(r.timers);
	rmq_reactor_fini(&r);
}
END_TEST

/* The wait helper: the condition first, its error, a timeout of 0. */
START_TEST(test_wait_until_results)
{
	struct rmq_reactor r;
	struct rmq_waiter  w;
	int                one = 1;

	reactor(&r);
	rmq_waiter_init(&w, 0);
	ck_assert_int_eq(rmq_wait_until(&r, &w, 0, has_run, &one), 0);
	rmq_waiter_init(&w, -1);
	ck_assert_int_eq(rmq_wait_until(&r, &w, 0, fails, NULL),
	                 -RMQ_ECONNRESET);
	rmq_waiter_init(&w, 0); /* RMQ_DONTWAIT */
	ck_assert_int_eq(rmq_wait_until(&r, &w, 0, never, NULL), -RMQ_EAGAIN);
	rmq_reactor_fini(&r);
}
END_TEST

static int idles;

static void
on_idle(void *owner)
{
	ck_assert_ptr_eq(owner, &owner_token);
	idles++;
}

/* RMQ_WAIT_IDLE: the idle hook runs on rounds that found nothing. */
START_TEST(test_idle_hook)
{
	struct rmq_reactor r;
	struct rmq_waiter  w;

	reactor(&r);
	r.idle = on_idle;
	idles  = 0;
	rmq_waiter_init(&w, 20);
	ck_assert_int_eq(rmq_wait_until(&r, &w, 0, never, NULL), -RMQ_EAGAIN);
	ck_assert_int_eq(idles, 0);
	rmq_waiter_init(&w, 20);
	ck_assert_int_eq(rmq_wait_until(&r, &w, RMQ_WAIT_IDLE, never, NULL),
	                 -RMQ_EAGAIN);
	ck_assert_int_gt(idles, 0);
	rmq_reactor_fini(&r);
}
END_TEST

static void
after_a(void *owner)
{
	RMQ_UNUSED(owner);
}

static void
after_b(void *owner)
{
	RMQ_UNUSED(owner);
}

static void
after_c(void *owner)
{
	RMQ_UNUSED(owner);
}

static void
after_d(void *owner)
{
	RMQ_UNUSED(owner);
}

static void
after_e(void *owner)
{
	RMQ_UNUSED(owner);
}

/* After-pass hooks: each once (its index again), a bounded number; each
 * runs only while armed. */
START_TEST(test_after_hooks)
{
	struct rmq_reactor r;
	int                a, b;

	reactor(&r);
	a = rmq_reactor_after(&r, after_a);
	ck_assert_int_eq(a, 0);
	ck_assert_int_eq(rmq_reactor_after(&r, after_a), a);
	ck_assert_int_eq(r.nafter, 1);
	b = rmq_reactor_after(&r, after_b);
	ck_assert_int_eq(b, 1);
	ck_assert_int_eq(r.nafter, 2);
	ck_assert_uint_eq(r.after_armed, 0);
	rmq_reactor_arm(&r, b, true);
	ck_assert_uint_eq(r.after_armed, 1u << b);
	rmq_reactor_arm(&r, a, true);
	rmq_reactor_arm(&r, b, false);
	ck_assert_uint_eq(r.after_armed, 1u << a);
	ck_assert_int_eq(rmq_reactor_after(&r, after_c), 2);
	ck_assert_int_eq(rmq_reactor_after(&r, after_d), 3);
	ck_assert_int_eq(rmq_reactor_after(&r, after_e), -RMQ_ENOMEM);
	/* no CQ yet: nothing to drain, no hook to run */
	ck_assert_int_eq(rmq_reactor_drain(&r), 0);
	rmq_reactor_fini(&r);
}
END_TEST

struct many {
	struct pollfd *fds;
	int           *ready;
};

static int
foreign_or_source(void *arg)
{
	struct many *m = arg;

	return (m->fds[0].revents & POLLIN) || *m->ready > 0;
}

/*
 * rmq_wait_many: several reactors and a foreign descriptor.  A foreign fd
 * that turns readable ends the wait with its revents set; so does a
 * source of the second reactor.
 */
START_TEST(test_wait_many)
{
	struct rmq_reactor  r1, r2, *rs[2] = {&r1, &r2};
	struct rmq_waiter   w;
	struct pipe_src     p;
	struct pollfd       fd;
	struct many         m = {&fd, &p.ready};
	int                 fds[2];

	reactor(&r1);
	reactor(&r2);
	pipe_open(&p, &r2);
	ck_assert_int_eq(rmq_source_add(&r2, &p.src, p.src.fd, on_ready), 0);
	ck_assert_int_eq(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
	fd = (struct pollfd){.fd = fds[0], .events = POLLIN};

	/* nothing: the deadline */
	rmq_waiter_init(&w, 30);
	ck_assert_int_eq(rmq_wait_many(rs, 2, &fd, 1, &w, 0,
	                               foreign_or_source, &m),
	                 -RMQ_EAGAIN);
	ck_assert_int_eq(fd.revents, 0);
	/* the foreign fd */
	ck_assert_int_eq(write(fds[1], "f", 1), 1);
	rmq_waiter_init(&w, 10000);
	ck_assert_int_eq(rmq_wait_many(rs, 2, &fd, 1, &w, 0,
	                               foreign_or_source, &m),
	                 0);
	ck_assert(fd.revents & POLLIN);
	ck_assert_int_eq(p.ready, 0);
	/* the second reactor's source (the foreign fd drained) */
	ck_assert_int_eq(read(fds[0], &p.last, 1), 1);
	fd.revents = 0;
	ck_assert_int_eq(write(p.wfd, "s", 1), 1);
	rmq_waiter_init(&w, 10000);
	ck_assert_int_eq(rmq_wait_many(rs, 2, &fd, 1, &w, 0,
	                               foreign_or_source, &m),
	                 0);
	ck_assert_int_eq(p.ready, 1);
	ck_assert_int_eq(fd.revents, 0);
	close(fds[0]);
	close(fds[1]);
	pipe_close(&p);
	rmq_reactor_fini(&r1);
	rmq_reactor_fini(&r2);
}
END_TEST

/* While spinning, a foreign fd is looked at too (spin_us > 0). */
START_TEST(test_wait_many_spinning)
{
	struct rmq_reactor  r, *rs[1] = {&r};
	struct rmq_waiter   w;
	struct pollfd       fd;
	int                 none = 0, fds[2];
	struct many         m = {&fd, &none};

	rmq_reactor_init(&r, &owner_token);
	r.spin_us = 10000000; /* never sleeps within the test */
	ck_assert_int_eq(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
	fd = (struct pollfd){.fd = fds[0], .events = POLLIN};
	ck_assert_int_eq(write(fds[1], "f", 1), 1);
	rmq_waiter_init(&w, 10000);
	ck_assert_int_eq(rmq_wait_many(rs, 1, &fd, 1, &w, 0,
	                               foreign_or_source, &m),
	                 0);
	ck_assert(fd.revents & POLLIN);
	close(fds[0]);
	close(fds[1]);
	rmq_reactor_fini(&r);
}
END_TEST

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* Memory keys come from a per-thread pool of getrandom() output: each is
 * handed out once, and a forked child never gets the parent's next ones. */
START_TEST(test_random_keys)
{
	enum { N = 4096, K = 8 };
	uint64_t *v = malloc(N * sizeof(*v)), mine[K], theirs[K];
	int       fds[2], i, j, same = 0, status;
	pid_t     pid;

	ck_assert_ptr_nonnull(v);
	for (i = 0; i < N; i++)
		v[i] = rmq_random64();
	qsort(v, N, sizeof(*v), cmp_u64);
	for (i = 1; i < N; i++)
		ck_assert_msg(v[i] != v[i - 1], "key %llx handed out twice",
		              (unsigned long long) v[i]);
	free(v);
	(void) rmq_random64(); /* the pool part used */
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		for (i = 0; i < K; i++)
			theirs[i] = rmq_random64();
		_exit(write(fds[1], theirs, sizeof(theirs)) ==
		      (ssize_t) sizeof(theirs) ? 0 : 1);
	}
	for (i = 0; i < K; i++)
		mine[i] = rmq_random64();
	ck_assert_int_eq(read(fds[0], theirs, sizeof(theirs)),
	                 (ssize_t) sizeof(theirs));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (i = 0; i < K; i++)
		for (j = 0; j < K; j++)
			same += mine[i] == theirs[j];
	ck_assert_msg(same == 0, "the child drew %d of the parent's keys",
	              same);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

static Suite *
reactor_suite(void)
{
	Suite *s  = suite_create("reactor");
	TCase *tc = tcase_create("unit");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_source_wakes_wait);
	tcase_add_test(tc, test_source_removed_while_dispatching);
	tcase_add_test(tc, test_many_sources);
	tcase_add_test(tc, test_timers);
	tcase_add_test(tc, test_wait_until_results);
	tcase_add_test(tc, test_idle_hook);
	tcase_add_test(tc, test_after_hooks);
	tcase_add_test(tc, test_wait_many);
	tcase_add_test(tc, test_wait_many_spinning);
	tcase_add_test(tc, test_random_keys);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(reactor_suite)
