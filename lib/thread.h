/*
 * progress: thread (thread.c) -- one progress thread per context, over the
 * reactors of its sockets.
 */
#ifndef RMQ_THREAD_H
#define RMQ_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct rmq_reactor;

struct rmq_thread {
	bool                on;       /* it runs: sockets lock their calls */
	bool                flusher;  /* inline mode: it only sends what the
	                               * sockets coalesced and the application
	                               * left queued (coalesce.flush_us) */
	bool                pinned;   /* pinned near the first domain */
	pthread_t           thr;
	atomic_bool         stop;
	int                 sleep_us; /* a round that found nothing sleeps */
	pthread_mutex_t     lock;     /* the list below */
	struct rmq_reactor *reactors; /* every socket's */
	/* The flusher: sleeps on cv while no batch is open anywhere. */
	atomic_int          open;     /* batches open in the context */
	atomic_uint         opened;   /* batches ever opened */
	atomic_bool         asleep;
	pthread_mutex_t     cvmu;
	pthread_cond_t      cv;
};

/*
 * Start at rmq_ctx_new (on: progress.mode is thread; flusher: inline mode
 * with coalescing, the thread then only wakes while batches are open and
 * sleeps sleep_us between its rounds); stop before the context goes.
 * 0 or -error.
 */
int  rmq_thread_start(struct rmq_thread *t, bool on, bool flusher,
                      int sleep_us);
/* A socket opened (+1) or sent or dropped (-1) a batch (counted for
 * the flusher only). */
void rmq_thread_batch(struct rmq_thread *t, int d);
void rmq_thread_stop(struct rmq_thread *t);
/* A socket's reactor joins (leaves) the thread's rounds. */
void rmq_thread_add(struct rmq_thread *t, struct rmq_reactor *r);
void rmq_thread_remove(struct rmq_thread *t, struct rmq_reactor *r);

#endif /* RMQ_THREAD_H */
