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

#include "ctx.h"
#include "progress.h"
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
	rmq_ctx            *ctx = arg;
	struct rmq_reactor *r;
	int                 did;

	while (!atomic_load(&ctx->stop)) {
		did = 0;
		pthread_mutex_lock(&ctx->socks_lock);
		for (r = ctx->reactors; r != NULL; r = r->ctx_next) {
			if (pthread_mutex_trylock(&r->mu) != 0)
				continue; /* the application is in it */
			if (r->cq != NULL) {
				did += rmq_reactor_progress(r);
				if (r->idle != NULL)
					r->idle(r->owner);
			}
			pthread_mutex_unlock(&r->mu);
		}
		pthread_mutex_unlock(&ctx->socks_lock);
		if (did == 0)
			nap(ctx->cfg.thread_sleep_us);
	}
	return NULL;
}

int
rmq_thread_start(rmq_ctx *ctx)
{
	int rc;

	atomic_init(&ctx->stop, false);
	pthread_mutex_init(&ctx->socks_lock, NULL);
	ctx->thread = ctx->cfg.progress_mode == RMQ_CFG_PROGRESS_THREAD;
	if (!ctx->thread)
		return 0;
	rc = pthread_create(&ctx->thr, NULL, progress_main, ctx);
	if (rc != 0) {
		rmq_log(RMQ_LOG_ERROR, "progress thread: %s", strerror(rc));
		ctx->thread = false;
		pthread_mutex_destroy(&ctx->socks_lock);
		return -rc;
	}
	return 0;
}

void
rmq_thread_stop(rmq_ctx *ctx)
{
	if (ctx->thread) {
		atomic_store(&ctx->stop, true);
		pthread_join(ctx->thr, NULL);
		ctx->thread = false;
	}
	pthread_mutex_destroy(&ctx->socks_lock);
}

void
rmq_thread_add(rmq_ctx *ctx, struct rmq_reactor *r)
{
	pthread_mutex_lock(&ctx->socks_lock);
	r->ctx_next   = ctx->reactors;
	ctx->reactors = r;
	pthread_mutex_unlock(&ctx->socks_lock);
}

void
rmq_thread_remove(rmq_ctx *ctx, struct rmq_reactor *r)
{
	struct rmq_reactor **pp;

	pthread_mutex_lock(&ctx->socks_lock);
	for (pp = &ctx->reactors; *pp != NULL; pp = &(*pp)->ctx_next)
		if (*pp == r) {
			*pp = r->ctx_next;
			break;
		}
	pthread_mutex_unlock(&ctx->socks_lock);
}
