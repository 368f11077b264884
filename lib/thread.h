/*
 * progress: thread (thread.c) -- one progress thread per context, over the
 * reactors of its sockets.
 */
#ifndef RMQ_THREAD_H
#define RMQ_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct rmq_reactor;

#define RMQ_THREAD_LINGER 8 /* sockets driven a while after a handshake */

struct rmq_thread {
	bool                on;       /* it runs: sockets lock their calls */
	bool                flusher;  /* inline mode: it only sends what the
	                               * sockets coalesced and the application
	                               * left queued (coalesce.flush_us) */
	bool                watcher;  /* inline mode: it also answers
	                               * handshakes (watched sources) */
	bool                pinned;   /* pinned near the first domain */
	pthread_t           thr;
	atomic_bool         stop;
	int                 sleep_us; /* a round that found nothing sleeps */
	pthread_mutex_t     lock;     /* the list below */
	struct rmq_reactor *reactors; /* every socket's */
	/* Inline mode: sleeps in epoll_wait on ep_fd -- wake_fd and the
	 * watched sources -- while no batch is open anywhere. */
	atomic_int          open;     /* batches open in the context */
	atomic_uint         opened;   /* batches ever opened */
	atomic_bool         asleep;
	int                 ep_fd, wake_fd;
	struct rmq_reactor *linger[RMQ_THREAD_LINGER];
	int64_t             linger_to[RMQ_THREAD_LINGER];
};

/*
 * Start at rmq_ctx_new (on: progress.mode is thread; else the inline
 * mode's thread, which answers handshakes, and with flusher (coalescing)
 * also wakes while batches are open, sleeping sleep_us between its
 * rounds); stop before the context goes.  0 or -error.
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
