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

static void *
progress_main(void *arg)
{
	struct rmq_thread  *t = arg;
	struct rmq_reactor *r;
	int                 did;

	while (!atomic_load(&t->stop)) {
		did = 0;
		pthread_mutex_lock(&t->lock);
		for (r = t->reactors; r != NULL; r = r->ctx_next) {
			if (pthread_mutex_trylock(&r->mu) != 0)
				continue; /* the application is in it */
			if (r->cq != NULL) {
				did += rmq_reactor_progress(r);
				if (r->idle != NULL)
					r->idle(r->owner);
			}
			pthread_mutex_unlock(&r->mu);
		}
		pthread_mutex_unlock(&t->lock);
		if (did == 0)
			nap(t->sleep_us);
	}
	return NULL;
}

int
rmq_thread_start(struct rmq_thread *t, bool on, int sleep_us)
{
	int rc;

	atomic_init(&t->stop, false);
	pthread_mutex_init(&t->lock, NULL);
	t->on       = on;
	t->sleep_us = sleep_us;
	if (!t->on)
		return 0;
	rc = pthread_create(&t->thr, NULL, progress_main, t);
	if (rc != 0) {
		rmq_log(RMQ_LOG_ERROR, "progress thread: %s", strerror(rc));
		t->on = false;
		pthread_mutex_destroy(&t->lock);
		return -rc;
	}
	return 0;
}

void
rmq_thread_stop(struct rmq_thread *t)
{
	if (t->on) {
		atomic_store(&t->stop, true);
		pthread_join(t->thr, NULL);
		t->on = false;
	}
	pthread_mutex_destroy(&t->lock);
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
