/*
 * progress: thread -- one progress thread per context.
 *
 * It walks the context's sockets' reactors, and for each one the
 * application is not inside right now (pthread_mutex_trylock on its lock,
 * which every API call holds), drives it -- drains the CQ, answers the
 * control channels -- and runs its idle work (pulling queued rendezvous
 * messages into heap buffers), so a peer's rendezvous send completes
 * while the application computes.  It never waits for a
 * socket lock, so it cannot deadlock with the application; a round that
 * found nothing sleeps progress.thread_sleep_us.
 *
 * In inline mode with coalescing (coalesce.enabled), the same thread is
 * the flusher: it sleeps on a condition variable while no socket of the
 * context has a batch open; once one has, it wakes every
 * coalesce.flush_us, and when no batch was opened during that time (the
 * application stopped sending) drives the reactors the application is not
 * in, whose after-pass hook sends the batches left queued -- so a message
 * that rmq_send coalesced leaves within about twice that time even when
 * the application makes no further call.  While batches keep being
 * opened (the application streams, and sends them itself) it looks less
 * often, up to every 8 periods: so a tail left right after a long stream
 * may wait up to about 16 periods.
 *
 * In inline mode the thread always runs, coalescing or not, for one more
 * job: it answers handshakes while the application is not in a call.  It
 * sleeps in epoll_wait on an eventfd (its wake-ups) and on the sockets'
 * watched sources -- listeners and handshakes in progress (conn/ctrl.c);
 * when one is readable it serves that socket's reactor if it can take its
 * lock (else the application is in a call, which serves it).  Idle, it
 * costs a thread blocked in epoll_wait; no message wakes it.
 *
 * The flusher tries a socket's lock with membarrier(2) (progress.h), so
 * that the application's side costs no atomic instruction per call.
 *
 * Lock order: socks_lock, then (try) a socket's lock.  The application
 * holds a socket's lock and may then take socks_lock (rmq_close), never
 * the other way round while waiting.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"
#include "thread.h"
#include "util.h"

static void
nap(int us)
{
	struct timespec ts = {.tv_sec = us / 1000000,
	                      .tv_nsec = (long) (us % 1000000) * 1000};

	if (us > 0)
		nanosleep(&ts, NULL);
}

/* One round over the reactors the application is not in. */
static int
round_all(struct rmq_thread *t)
{
	struct rmq_reactor *r;
	int                 did = 0;

	pthread_mutex_lock(&t->lock);
	for (r = t->reactors; r != NULL; r = r->ctx_next) {
		if (!rmq_reactor_trylock(r))
			continue; /* the application is in it */
		if (r->cq != NULL) {
			did += rmq_reactor_progress(r);
			if (r->idle != NULL)
				r->idle(r->owner);
		}
		rmq_reactor_unlock_thr(r);
	}
	pthread_mutex_unlock(&t->lock);
	return did;
}

static void *
progress_main(void *arg)
{
	struct rmq_thread *t = arg;

	while (!atomic_load(&t->stop))
		if (round_all(t) == 0)
			nap(t->sleep_us);
	return NULL;
}

/*
 * A socket whose handshake we served is driven every millisecond for a
 * while after: the provider's own connection to the new peer comes up
 * inside progress calls (tcp;ofi_rxm), and the peer's first message waits
 * for it.
 */
#define LINGER_NS (500 * 1000000ll)

/* r, if it is still one of ours (it may have closed since). */
static struct rmq_reactor *
ours(struct rmq_thread *t, const void *r)
{
	struct rmq_reactor *i;

	for (i = t->reactors; i != NULL && i != r; i = i->ctx_next)
		;
	return i;
}

/* 1: served; 0: the application is in it (it serves it itself; its
 * sources stay readable meanwhile: look again after a nap). */
static int
serve_one(struct rmq_thread *t, struct rmq_reactor *r, int64_t now)
{
	int i, k = -1;

	if (!rmq_reactor_trylock(r))
		return 0;
	(void) rmq_reactor_serve(r);
	rmq_reactor_unlock_thr(r);
	for (i = 0; i < RMQ_THREAD_LINGER; i++)
		if (t->linger[i] == r || (k < 0 && t->linger[i] == NULL))
			k = i;
	if (k >= 0) {
		t->linger[k]    = r;
		t->linger_to[k] = now + LINGER_NS;
	}
	return 1;
}

/* Serve what woke us, and the sockets still lingering.  0: sleep until
 * woken; 1: look again in a millisecond; 2: a socket was busy, whose
 * sources stay readable: nap a millisecond first, not to spin. */
static int
serve_watched(struct rmq_thread *t, const struct epoll_event *ev, int n)
{
	struct rmq_reactor *r;
	int64_t             now = rmq_now_ns();
	uint64_t            v;
	int                 i, again = 0;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < n; i++) {
		if (ev[i].data.ptr == NULL) /* a wake-up */
			(void) read(t->wake_fd, &v, sizeof(v));
		else if ((r = ours(t, ev[i].data.ptr)) != NULL &&
		         serve_one(t, r, now) == 0)
			again = 2;
	}
	for (i = 0; i < RMQ_THREAD_LINGER; i++) {
		if (t->linger[i] == NULL)
			continue;
		if (now >= t->linger_to[i] ||
		    (r = ours(t, t->linger[i])) == NULL) {
			t->linger[i] = NULL;
			continue;
		}
		again = again ? again : 1;
		if (rmq_reactor_trylock(r)) {
			(void) rmq_reactor_progress_timed(r);
			rmq_reactor_unlock_thr(r);
		}
	}
	pthread_mutex_unlock(&t->lock);
	return again;
}

/* Asleep until a batch opens, a watched source is readable or stop. */
static void
sleep_watching(struct rmq_thread *t)
{
	struct epoll_event ev[16];
	int                n, again = 0;

	atomic_store(&t->asleep, true);
	while (atomic_load(&t->open) == 0 && !atomic_load(&t->stop)) {
		if (again == 2)
			nap(1000);
		n = epoll_wait(t->ep_fd, ev, 16,
		               again == 2 ? 0 : again == 1 ? 1 : -1);
		if (n < 0 && errno != EINTR)
			break; /* cannot happen with a valid set */
		again = serve_watched(t, ev, n > 0 ? n : 0);
	}
	atomic_store(&t->asleep, false);
}

static void *
flush_main(void *arg)
{
	struct rmq_thread *t    = arg;
	unsigned           seen = 0, now;
	int                nap_us = t->sleep_us;

	while (!atomic_load(&t->stop)) {
		if (atomic_load(&t->open) == 0) {
			sleep_watching(t);
			continue;
		}
		/* The application's chance to send them itself first; while
		 * it opens batches it is making calls, and sends them itself:
		 * then stay out of its way (and its locks). */
		nap(nap_us);
		now = atomic_load(&t->opened);
		if (now != seen) {
			/* Streaming: look less often (each look is a context
			 * switch on a busy CPU), up to 8 times the period. */
			seen = now;
			if (nap_us < 8 * t->sleep_us)
				nap_us *= 2;
			continue;
		}
		nap_us = t->sleep_us;
		(void) round_all(t);
	}
	return NULL;
}

static void
wake(struct rmq_thread *t)
{
	uint64_t one = 1;

	if (t->wake_fd >= 0)
		(void) write(t->wake_fd, &one, sizeof(one));
}

void
rmq_thread_batch(struct rmq_thread *t, int d)
{
	if (!t->flusher)
		return; /* a progress thread looks at every socket anyway */
	if (d > 0)
		atomic_fetch_add(&t->opened, 1);
	if (atomic_fetch_add(&t->open, d) == 0 && d > 0 &&
	    atomic_load(&t->asleep))
		wake(t);
}

int
rmq_thread_start(struct rmq_thread *t, bool on, bool flusher, int sleep_us)
{
	int rc;

	memset(t->linger, 0, sizeof(t->linger));
	atomic_init(&t->stop, false);
	atomic_init(&t->open, 0);
	atomic_init(&t->opened, 0);
	atomic_init(&t->asleep, false);
	pthread_mutex_init(&t->lock, NULL);
	t->flusher  = !on && flusher;
	t->watcher  = !on;
	t->on       = true;
	t->sleep_us = sleep_us;
	t->ep_fd    = -1;
	t->wake_fd  = -1;
	if (t->watcher) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

		t->ep_fd   = epoll_create1(EPOLL_CLOEXEC);
		t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (t->ep_fd < 0 || t->wake_fd < 0 ||
		    epoll_ctl(t->ep_fd, EPOLL_CTL_ADD, t->wake_fd, &ev) != 0) {
			rc = errno;
			goto fail;
		}
	}
	rc = pthread_create(&t->thr, NULL, t->watcher ? flush_main
	                                              : progress_main, t);
	if (rc == 0)
		return 0;
fail:
	rmq_log(RMQ_LOG_INFO, "%s thread: %s",
	        t->watcher ? "handshake and flusher" : "progress",
	        strerror(rc));
	if (t->ep_fd >= 0)
		close(t->ep_fd);
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	t->on      = false;
	t->flusher = false;
	t->watcher = false;
	pthread_mutex_destroy(&t->lock);
	return -rc;
}

void
rmq_thread_stop(struct rmq_thread *t)
{
	if (t->on) {
		atomic_store(&t->stop, true);
		wake(t);
		pthread_join(t->thr, NULL);
		t->on = false;
	}
	if (t->ep_fd >= 0)
		close(t->ep_fd);
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	t->ep_fd = t->wake_fd = -1;
	pthread_mutex_destroy(&t->lock);
}

void
rmq_thread_add(struct rmq_thread *t, struct rmq_reactor *r)
{
	pthread_mutex_lock(&t->lock);
	r->ctx_next  = t->reactors;
	t->reactors  = r;
	r->watch_fd  = t->ep_fd;
	pthread_mutex_unlock(&t->lock);
}

void
rmq_thread_remove(struct rmq_thread *t, struct rmq_reactor *r)
{
	struct rmq_reactor **pp;
	int                  i;

	pthread_mutex_lock(&t->lock);
	for (pp = &t->reactors; *pp != NULL; pp = &(*pp)->ctx_next)
		if (*pp == r) {
			*pp = r->ctx_next;
			break;
		}
	for (i = 0; i < RMQ_THREAD_LINGER; i++)
		if (t->linger[i] == r)
			t->linger[i] = NULL;
	pthread_mutex_unlock(&t->lock);
}
