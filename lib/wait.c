/*
 * Waiting (progress.h): a condition checked between progress rounds,
 * spinning first, then sleeping as the reactor's sources and CQ allow.
 *
 * Waiting spins first: on this class of machine waking a sleeping process
 * on another CPU costs many busy-poll round trips (docs/INTERNALS.md §17,
 * "waiting").  After spin_us
 * it sleeps in poll() on the CQ wait fd (after fi_trywait) and the
 * sources, or, where the provider has no wait fd (shm), in short sleeps
 * that back off from 10 us to 1 ms, then in poll() on the sources.
 */
#include <time.h>

#include <rdma/fi_eq.h>

#include "progress.h"
#include "util.h"

/* ---- waiting ---- */

void
rmq_waiter_init(struct rmq_waiter *w, int timeout_ms)
{
	w->start      = 0;
	w->deadline   = INT64_MAX;
	w->timeout_ms = timeout_ms;
	w->backoff_us = 10;
	w->spins      = 0;
	w->slept      = false;
}

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* All of rs have a CQ wait fd, and fi_trywait says it is safe to sleep. */
static bool
can_sleep_on_fds(struct rmq_reactor *const *rs, int nr)
{
	struct fid *fids[1];
	int         i;

	for (i = 0; i < nr; i++) {
		if (rs[i]->cq == NULL)
			continue; /* nothing to wake us but its sources */
		if (rs[i]->cq_fd < 0)
			return false;
		fids[0] = &rs[i]->cq->fid;
		if (fi_trywait(rs[i]->fabric, fids, 1) != 0)
			return false;
	}
	return true;
}

/*
 * Spinning: read the clock only every 64th time round,
 * the first time too (a ping-pong's every receive waits a little: a
 * clock read at its first empty poll was on the path of most messages),
 * and no pause instruction in between (it costs up to ~140 cycles on
 * recent x86: that much later would we see the next completion).
 */
static inline bool
spin_on(struct rmq_waiter *w)
{
	/* With a timeout too (RMQ_RCVTIMEO, RMQ_SNDTIMEO): its deadline is
	 * looked at every 64th round, not every round -- a clock read each
	 * round made a PULL or SUB with RMQ_RCVTIMEO set take 64 B messages
	 * markedly slower than a PAIR without.  A zero timeout
	 * (RMQ_DONTWAIT) goes to idle_many at once, which returns.  Once
	 * spin_us has passed, none: between two sleeps, 63 cheap rounds
	 * were 63 completion-queue reads, each a poll(2) on tcp without a
	 * wait fd -- an idle rmq_poll there kept a core noticeably busy,
	 * where it sleeps 1 ms at a time (measured: INTERNALS §17). */
	return !w->slept && (++w->spins & 63) != 0 && w->timeout_ms != 0;
}

/* An idle round past the cheap spins of spin_on(). */
static int
idle_many(struct rmq_reactor *const *rs, int nr, struct pollfd *fds, int nfds,
          struct rmq_waiter *w)
{
	int64_t         now, left, next = INT64_MAX, t;
	struct timespec ts;
	bool            have_cq = false, fd_wait = true;
	int             ms, i;

	now = rmq_now_ns();
	if (w->start == 0) {
		w->start = now;
		if (w->timeout_ms >= 0)
			w->deadline = now + (int64_t) w->timeout_ms * 1000000;
	}
	if (now >= w->deadline)
		return -RMQ_EAGAIN;
	if (now - w->start < (int64_t) rs[0]->spin_us * 1000) {
		if (nfds > 0)
			(void) rmq_poll_round(rs, 0, false, fds, nfds, 0);
		cpu_relax();
		return 0;
	}
	w->slept = true;
	left = w->deadline - now;
	ms   = left / 1000000 > RMQ_SLEEP_MAX_MS ? RMQ_SLEEP_MAX_MS
	                                         : (int) (left / 1000000) + 1;
	for (i = 0; i < nr; i++) {
		t = rmq_timers_next(rs[i]);
		next = t < next ? t : next;
		have_cq = have_cq || rs[i]->cq != NULL;
		fd_wait = fd_wait && (rs[i]->cq == NULL || rs[i]->cq_fd >= 0);
	}
	if (next != INT64_MAX && (next - now) / 1000000 + 1 < ms)
		ms = next > now ? (int) ((next - now) / 1000000) + 1 : 1;
	/* What a pass would send last goes before we sleep: with a memory
	 * source only one round in 16 drains (and runs the hooks), and a
	 * sleep can take a whole linger -- a close once lost the records a
	 * link held back for its peer that way. */
	for (i = 0; i < nr; i++)
		rmq_reactor_after_run(rs[i]);
	/* Peers on a memory source wake us from here on; what they wrote
	 * just before, we take first. */
	for (i = 0; i < nr; i++)
		if (rs[i]->mem_on && rs[i]->mem_arm(rs[i]->owner) != 0)
			return 0;
	if (fd_wait) {
		if (!have_cq || can_sleep_on_fds(rs, nr)) {
			for (i = 0; i < nr; i++)
				rs[i]->next_poll = now + RMQ_POLL_NS;
			(void) rmq_poll_round(rs, nr, true, fds, nfds, ms);
		}
		return 0;
	}
	/* No wait fd: short sleeps, growing; the sources on the way. */
	if (w->backoff_us >= 1000) {
		for (i = 0; i < nr; i++)
			rs[i]->next_poll = now + RMQ_POLL_NS;
		(void) rmq_poll_round(rs, nr, false, fds, nfds, 1);
	} else {
		if (nfds > 0)
			(void) rmq_poll_round(rs, 0, false, fds, nfds, 0);
		ts.tv_sec  = 0;
		ts.tv_nsec = (long) w->backoff_us * 1000;
		nanosleep(&ts, NULL);
		w->backoff_us *= 2;
	}
	/* Nothing wakes us for the CQ, so read it after every sleep: with a
	 * memory source, rmq_reactor_progress reads it one round in up to
	 * RMQ_MEM_CQ_MAX, which at a millisecond a round let a peer's ring
	 * write sit unseen for seconds (check_rbatch, strict, libfabric
	 * 2.1's tcp: docs/INTERNALS.md §14).  One read per sleep costs
	 * nothing beside the sleep. */
	for (i = 0; i < nr; i++)
		if (rs[i]->mem_on && rs[i]->cq != NULL)
			(void) rmq_reactor_drain(rs[i]);
	return 0;
}

int
rmq_reactor_idle(struct rmq_reactor *r, struct rmq_waiter *w)
{
	return spin_on(w) ? 0 : idle_many(&r, 1, NULL, 0, w);
}

static int
wait_many(struct rmq_reactor *const *rs, int nr, struct pollfd *fds,
          int nfds, struct rmq_waiter *w, unsigned flags, rmq_cond_fn cond,
          void *arg)
{
	int i, n, rc;

	for (;;) {
		rc = cond(arg);
		if (rc != 0)
			return rc > 0 ? 0 : rc;
		for (i = 0; i < nr; i++)
			if (rs[i]->stop != NULL && atomic_load(rs[i]->stop))
				return -RMQ_ECLOSED;
		for (i = 0, n = 0; i < nr; i++)
			n += rmq_reactor_progress(rs[i]);
		if (n > 0)
			continue;
		for (i = 0, n = 0; i < nr; i++)
			if (rs[i]->idle != NULL &&
			    ((flags & RMQ_WAIT_IDLE) || rs[i]->idle_any)) {
				rs[i]->idle(rs[i]->owner);
				n++;
			}
		if (n > 0) {
			rc = cond(arg);
			if (rc != 0)
				return rc > 0 ? 0 : rc;
		}
		if (!spin_on(w) && idle_many(rs, nr, fds, nfds, w) != 0)
			return -RMQ_EAGAIN;
	}
}

int
rmq_wait_many(struct rmq_reactor *const *rs, int nr, struct pollfd *fds,
              int nfds, struct rmq_waiter *w, unsigned flags,
              rmq_cond_fn cond, void *arg)
{
	int i, rc;

	for (i = 0; i < nr; i++)
		rs[i]->waiting++;
	rc = wait_many(rs, nr, fds, nfds, w, flags, cond, arg);
	for (i = 0; i < nr; i++)
		rs[i]->waiting--;
	return rc;
}

static int
wait_until(struct rmq_reactor *r, struct rmq_waiter *w, unsigned flags,
           rmq_cond_fn cond, void *arg)
{
	int rc;

	for (;;) {
		rc = cond(arg);
		if (rc != 0)
			return rc > 0 ? 0 : rc;
		if (r->stop != NULL && atomic_load(r->stop))
			return -RMQ_ECLOSED; /* rmq_ctx_shutdown */
		if (rmq_reactor_progress(r) > 0)
			continue;
		if (((flags & RMQ_WAIT_IDLE) || r->idle_any) &&
		    r->idle != NULL) {
			r->idle(r->owner);
			rc = cond(arg);
			if (rc != 0)
				return rc > 0 ? 0 : rc;
		}
		if (!spin_on(w) && idle_many(&r, 1, NULL, 0, w) != 0)
			return -RMQ_EAGAIN;
	}
}

int
rmq_wait_until(struct rmq_reactor *r, struct rmq_waiter *w, unsigned flags,
               rmq_cond_fn cond, void *arg)
{
	int rc;

	r->waiting++;
	rc = wait_until(r, w, flags, cond, arg);
	r->waiting--;
	return rc;
}
