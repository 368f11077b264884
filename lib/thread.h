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
	bool                pinned;   /* pinned near the first domain */
	pthread_t           thr;
	atomic_bool         stop;
	int                 sleep_us; /* a round that found nothing sleeps */
	pthread_mutex_t     lock;     /* the list below */
	struct rmq_reactor *reactors; /* every socket's */
};

/* Start (on: progress.mode is thread) at rmq_ctx_new; stop before the
 * context goes.  0 or -error. */
int  rmq_thread_start(struct rmq_thread *t, bool on, int sleep_us);
void rmq_thread_stop(struct rmq_thread *t);
/* A socket's reactor joins (leaves) the thread's rounds. */
void rmq_thread_add(struct rmq_thread *t, struct rmq_reactor *r);
void rmq_thread_remove(struct rmq_thread *t, struct rmq_reactor *r);

#endif /* RMQ_THREAD_H */
