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
 * The flusher tries a socket's lock with membarrier(2) (progress.h), so
 * that the application's side costs no atomic instruction per call.
 *
 * Lock order: socks_lock, then (try) a socket's lock.  The application
 * holds a socket's lock and may then take socks_lock (rmq_close), never
 * the other way round while waiting.
 */
#include <string.h>
#include <time.h>

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

static void *
flush_main(void *arg)
{
	struct rmq_thread *t    = arg;
	unsigned           seen = 0, now;
	int                nap_us = t->sleep_us;

	while (!atomic_load(&t->stop)) {
		if (atomic_load(&t->open) == 0) {
			pthread_mutex_lock(&t->cvmu);
			atomic_store(&t->asleep, true);
			while (atomic_load(&t->open) == 0 &&
			       !atomic_load(&t->stop))
				pthread_cond_wait(&t->cv, &t->cvmu);
			atomic_store(&t->asleep, false);
			pthread_mutex_unlock(&t->cvmu);
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

void
rmq_thread_batch(struct rmq_thread *t, int d)
{
	if (!t->flusher)
		return; /* a progress thread looks at every socket anyway */
	if (d > 0)
		atomic_fetch_add(&t->opened, 1);
	if (atomic_fetch_add(&t->open, d) == 0 && d > 0 &&
	    atomic_load(&t->asleep)) {
		pthread_mutex_lock(&t->cvmu);
		pthread_cond_signal(&t->cv);
		pthread_mutex_unlock(&t->cvmu);
	}
}

int
rmq_thread_start(struct rmq_thread *t, bool on, bool flusher, int sleep_us)
{
	int rc;

	atomic_init(&t->stop, false);
	atomic_init(&t->open, 0);
	atomic_init(&t->opened, 0);
	atomic_init(&t->asleep, false);
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->cvmu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->flusher  = !on && flusher;
	t->on       = on || t->flusher;
	t->sleep_us = sleep_us;
	if (!t->on)
		return 0;
	rc = pthread_create(&t->thr, NULL, t->flusher ? flush_main
	                                              : progress_main, t);
	if (rc != 0) {
		rmq_log(RMQ_LOG_ERROR, "%s thread: %s",
		        t->flusher ? "flusher" : "progress", strerror(rc));
		t->on      = false;
		t->flusher = false;
		pthread_mutex_destroy(&t->lock);
		pthread_mutex_destroy(&t->cvmu);
		pthread_cond_destroy(&t->cv);
		return -rc;
	}
	return 0;
}

void
rmq_thread_stop(struct rmq_thread *t)
{
	if (t->on) {
		atomic_store(&t->stop, true);
		pthread_mutex_lock(&t->cvmu);
		pthread_cond_signal(&t->cv);
		pthread_mutex_unlock(&t->cvmu);
		pthread_join(t->thr, NULL);
		t->on = false;
	}
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->cvmu);
	pthread_cond_destroy(&t->cv);
}

void
rmq_thread_add(struct rmq_thread *t, struct rmq_reactor *r)
{
	pthread_mutex_lock(&t->lock);
	r->ctx_next  = t->reactors;
	t->reactors  = r;
	pthread_mutex_unlock(&t->lock);
}

void
rmq_thread_remove(struct rmq_thread *t, struct rmq_reactor *r)
{
	struct rmq_reactor **pp;

	pthread_mutex_lock(&t->lock);
	for (pp = &t->reactors; *pp != NULL; pp = &(*pp)->ctx_next)
		if (*pp == r) {
			*pp = r->ctx_next;
			break;
		}
	pthread_mutex_unlock(&t->lock);
}
