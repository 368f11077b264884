/*
 * progress: thread -- one progress thread per context.
 *
 * It walks the context's sockets, and for each one the application is not
 * inside right now (pthread_mutex_trylock on the socket's lock, which every
 * API call holds), drains the CQ, answers the control channels, and pulls
 * queued rendezvous messages into heap buffers, so a peer's rendezvous
 * send completes while the application computes.  It never waits for a
 * socket lock, so it cannot deadlock with the application; a round that
 * found nothing sleeps progress.thread_sleep_us.
 *
 * Lock order: socks_lock, then (try) a socket's lock.  The application
 * holds a socket's lock and may then take socks_lock (rmq_close), never
 * the other way round while waiting.
 */
#include <string.h>
#include <time.h>

#include "rmq_int.h"

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
	rmq_ctx           *ctx = arg;
	struct rmq_socket *s;
	int                did;

	while (!atomic_load(&ctx->stop)) {
		did = 0;
		pthread_mutex_lock(&ctx->socks_lock);
		for (s = ctx->socks; s != NULL; s = s->ctx_next) {
			if (pthread_mutex_trylock(&s->mu) != 0)
				continue; /* the application is in it */
			if (s->ep != NULL) {
				did += rmq_progress(s);
				rmq_xfer_pull_pending(s);
			}
			pthread_mutex_unlock(&s->mu);
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
rmq_thread_add(rmq_ctx *ctx, struct rmq_socket *s)
{
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_lock(&ctx->socks_lock);
	s->ctx_next = ctx->socks;
	ctx->socks  = s;
	pthread_mutex_unlock(&ctx->socks_lock);
}

void
rmq_thread_remove(rmq_ctx *ctx, struct rmq_socket *s)
{
	struct rmq_socket **pp;

	pthread_mutex_lock(&ctx->socks_lock);
	for (pp = &ctx->socks; *pp != NULL; pp = &(*pp)->ctx_next)
		if (*pp == s) {
			*pp = s->ctx_next;
			break;
		}
	pthread_mutex_unlock(&ctx->socks_lock);
}
