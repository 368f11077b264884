/*
 * The reactor: completions and file descriptors in, callbacks out.
 *
 * Every operation librmq posts to libfabric is a struct rmq_op whose first
 * member is the fi_context2 libfabric sees; when its completion (or error)
 * comes out of the CQ, the reactor calls op->done.  File descriptors (the
 * control channels, listeners) register as sources and get their ready
 * callback; timers run at every poll round.  One helper, rmq_wait_until(),
 * drives all of it until a condition holds: every blocking call in librmq
 * is that helper with its own condition.
 *
 * The reactor knows no path, no pattern and no control-channel function:
 * it only calls what was registered with it.  The owner pointer (the
 * socket) is handed back to every callback.
 *
 *                      +-------- rmq_reactor_progress() --------+
 *   fi_cq_read ------> | op->done(op, cqe, owner)              |
 *   remote CQ data --> | on_imm(owner, data)                   |
 *   after the pass --> | after[i](owner), if armed (reposts...) |
 *   every ~1 ms -----> | poll(sources): src->ready; timers     |
 *                      +----------------------------------------+
 *   rmq_wait_until(): cond? -> progress -> idle hook -> spin, then sleep
 *                     in poll() on the CQ wait fd and the sources
 */
#ifndef RMQ_PROGRESS_H
#define RMQ_PROGRESS_H

/* While every live peer is on a memory source, the CQ is read at least
 * one round in this many (a power of two; see rmq_reactor_progress). */
#define RMQ_MEM_CQ_MAX 1024

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

/* One completion, as the reactor hands it to an operation. */
struct rmq_cqe {
	uint64_t flags; /* fi_cq_data_entry flags */
	void    *buf;   /* received data (multi-recv), or NULL */
	size_t   len;
	uint64_t data;  /* remote CQ data */
	int      err;   /* 0, or -FI_Exxx (never 0 for an error entry) */
};

struct rmq_op;
/* owner: the reactor's owner (the socket the operation belongs to). */
typedef void (*rmq_op_done_fn)(struct rmq_op *op, const struct rmq_cqe *e,
                               void *owner);

struct rmq_op {
	struct fi_context2 fctx; /* first: what libfabric sees */
	rmq_op_done_fn     done;
	unsigned           flags; /* RMQ_OP_F_* */
};

#define RMQ_OP_F_RECV 0x1u /* a posted receive buffer: a remote write may
                            * consume it (mode FI_RX_CQ_DATA) */

static inline void
rmq_op_init(struct rmq_op *op, rmq_op_done_fn done, unsigned flags)
{
	op->done  = done;
	op->flags = flags;
}

/* A file descriptor the reactor polls for input. */
struct rmq_source {
	int   fd;
	void (*ready)(struct rmq_source *src, short revents, void *owner);
	int   idx; /* in the reactor's table; -1: not registered */
	bool  watched; /* in the reactor's watch set too */
};

/*
 * A timer runs at every poll round (about every millisecond while the
 * owner progresses, and after every sleep); when says until when a wait
 * may sleep before it must run (INT64_MAX: no deadline).
 */
struct rmq_timer {
	void (*run)(struct rmq_timer *t, int64_t now, void *owner);
	int64_t           when;
	struct rmq_timer *next;
};

#define RMQ_REACTOR_AFTER_MAX 4

struct rmq_reactor {
	void              *owner;     /* handed to every callback */
	struct fid_cq     *cq;        /* NULL until the endpoint opens */
	struct fid_fabric *fabric;    /* for fi_trywait */
	int                cq_fd;     /* -1: none: spin, then short sleeps */
	bool               rx_cq_data; /* a remote write may consume one of
	                                * our receives (FI_RX_CQ_DATA) */
	/* A peer's fi_writedata landed (FI_REMOTE_CQ_DATA at the target). */
	void (*on_imm)(void *owner, uint64_t data);
	/* Takes a completion error that comes with no context (shm 1.17's
	 * fast RMA fails a bad read so); NULL: such errors are logged. */
	struct rmq_op     *orphan;
	/* Run after a CQ pass while armed (repost receives, post deferred
	 * sends): bit i of after_armed arms after[i]. */
	void (*after[RMQ_REACTOR_AFTER_MAX])(void *owner);
	int                nafter;
	unsigned           after_armed;
	/* Inside rmq_wait_until / rmq_wait_many (nested: a count): an
	 * after-pass hook may then send at once what it would let gather
	 * during a pass from within a call (coalesced messages). */
	int                waiting;
	/* Idle work: waits with RMQ_WAIT_IDLE and the progress thread run it
	 * when a round found nothing (pull queued rendezvous messages). */
	void (*idle)(void *owner);
	bool               idle_any;  /* and on idle rounds of every wait
	                               * (sends kept for a first peer) */

	/* A memory source beside the CQ: rings a link shares with its
	 * peers (link_ops.h), read while mem_on.  poll takes in what they
	 * hold, a count; arm, before the reactor blocks, asks the peers to
	 * wake it and says whether something came meanwhile (then it does
	 * not block); only: every live peer is reached through it (then
	 * the CQ is read less often). */
	int  (*mem_poll)(void *owner);
	int  (*mem_arm)(void *owner);
	bool (*mem_only)(void *owner);
	bool               mem_on;
	unsigned           mticks;   /* rounds that looked at the memory source only */
	unsigned           mmask;    /* the CQ every mmask + 1 of them
	                              * (RMQ_MEM_CQ_MAX at most) */
	int                cq_got;   /* what the last drain read from it */
	/* A deaf wait fd (heard() in progress.c): cq_quiet -- the last
	 * sleep had the wait fd in its set and ran to its timeout;
	 * quiet_hist -- one bit per such sleep, newest lowest, set where the
	 * drain after it still found a message that had come in. */
	bool               cq_quiet;
	uint8_t            quiet_hist;

	struct rmq_source **srcs;     /* registered sources (NULL: removed) */
	int                nsrcs, srcs_cap;
	/* The sources' own epoll set (each under its index in srcs): a poll
	 * round polls it and the CQ fd, not every source, so that a round
	 * costs what is ready, not what is connected (a ROUTER's thousands
	 * of peers).  -1: not made, or it failed once (src_ep_bad): every
	 * source is polled. */
	int                src_ep;
	bool               src_ep_bad;
	int                dispatching;
	bool               holes;     /* removed while dispatching */
	struct rmq_timer  *timers;
	int64_t            timer_due; /* no timer is due before */
	int64_t            next_poll;
	unsigned           ticks;
	int                spin_us;   /* busy-poll this long before sleeping */

	/* RMQ_FD (made at the first ask): an epoll set of the sources, the
	 * CQ wait fd (or, with none, a 1 ms timer) and a kick eventfd. */
	int                ep_fd, kick_fd, tick_fd;
	int                tick_ms; /* the timer's next period */

	/* Set (rmq_ctx_shutdown): every wait returns -RMQ_ECLOSED.  NULL:
	 * never (a closing socket's waits linger all the same). */
	const atomic_bool *stop;

	/* progress: thread, or a flusher -- held by every API call and
	 * tried by that thread (thread.c), which never waits for it.  An
	 * atomic flag (busy); or, with asym (the flusher, which tries
	 * rarely), two flags the application sets with plain stores while
	 * the thread pays with membarrier(2): any atomic instruction per
	 * call cost a third of a coalesced send. */
	atomic_int         busy;
	atomic_int         app_in, thr_in;
	bool               asym;
	struct rmq_reactor *ctx_next; /* the context's list (thread.c) */
	/* The context thread's epoll set (thread.c; -1: none): watched
	 * sources (listeners, handshakes) wake that thread, which then
	 * serves them while the application is not in a call. */
	int                watch_fd;
};

/*
 * The reactor's owner lock: the application's side waits (yielding), the
 * thread's side only tries (rmq_reactor_trylock, progress.c).  With asym
 * the application's side is a plain store and load: the thread's
 * membarrier(2) orders them against its own (Dekker's protocol with the
 * fence paid by the rare side only).
 */
static inline void
rmq_reactor_lock(struct rmq_reactor *r)
{
	if (!r->asym) {
		while (atomic_exchange_explicit(&r->busy, 1,
		                                memory_order_acquire))
			sched_yield();
		return;
	}
	for (;;) {
		atomic_store_explicit(&r->app_in, 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		if (!atomic_load_explicit(&r->thr_in, memory_order_relaxed)) {
			atomic_thread_fence(memory_order_acquire);
			return;
		}
		atomic_store_explicit(&r->app_in, 0, memory_order_relaxed);
		while (atomic_load(&r->thr_in))
			sched_yield();
	}
}

bool rmq_reactor_trylock(struct rmq_reactor *r);

static inline void
rmq_reactor_unlock(struct rmq_reactor *r)
{
	if (r->asym)
		atomic_store_explicit(&r->app_in, 0, memory_order_release);
	else
		atomic_store_explicit(&r->busy, 0, memory_order_release);
}

/* The thread's side gives it back. */
void rmq_reactor_unlock_thr(struct rmq_reactor *r);
/* Can the asymmetric lock work here (membarrier registered)?  Once per
 * process, before any socket uses it. */
bool rmq_reactor_asym_ok(void);

void rmq_reactor_init(struct rmq_reactor *r, void *owner);
void rmq_reactor_fini(struct rmq_reactor *r);
/* Attach the CQ once the endpoint is open (cq NULL: detach). */
void rmq_reactor_set_cq(struct rmq_reactor *r, struct fid_cq *cq, int cq_fd,
                        struct fid_fabric *fabric, bool rx_cq_data);
/* Register an after-pass hook (once: again, the same index); its index,
 * or -RMQ_ENOMEM.  It runs only while armed. */
int  rmq_reactor_after(struct rmq_reactor *r, void (*fn)(void *owner));

static inline void
rmq_reactor_arm(struct rmq_reactor *r, int hook, bool armed)
{
	if (armed)
		r->after_armed |= 1u << hook;
	else
		r->after_armed &= ~(1u << hook);
}

#define RMQ_POLL_NS      1000000 /* sources every 1 ms while progressing */
#define RMQ_SLEEP_MAX_MS 100

/* For wait.c: the timers' next deadline (INT64_MAX: none); one poll of
 * rs's sources (with_cq: their CQ wait fds too) and the foreign fds for
 * up to timeout_ms, the ready sources called, the timers run: events. */
int64_t rmq_timers_next(const struct rmq_reactor *r);
int     rmq_poll_round(struct rmq_reactor *const *rs, int nr, bool with_cq,
                       struct pollfd *foreign, int nfds, int timeout_ms);

int  rmq_source_add(struct rmq_reactor *r, struct rmq_source *src, int fd,
                    void (*ready)(struct rmq_source *, short, void *));
void rmq_source_remove(struct rmq_reactor *r, struct rmq_source *src);
/* Also wake the context thread when src is readable (rmq_reactor_serve
 * then runs it); removed with the source. */
void rmq_source_watch(struct rmq_reactor *r, struct rmq_source *src);
void rmq_timer_add(struct rmq_reactor *r, struct rmq_timer *t,
                   void (*run)(struct rmq_timer *, int64_t, void *));
void rmq_timer_remove(struct rmq_reactor *r, struct rmq_timer *t);
/* Run t at when (ns, rmq_now_ns; INT64_MAX: not): a progress round that
 * finds it due runs it, without waiting for the millisecond's poll. */
void rmq_timer_set(struct rmq_reactor *r, struct rmq_timer *t, int64_t when);

/*
 * RMQ_FD: a file descriptor that is readable while any of the reactor's
 * own fds is (a source, the CQ wait fd; where there is none, a timer
 * every millisecond) or it was kicked.  Made at the first call; -errno if
 * it cannot be.
 */
int  rmq_reactor_fd(struct rmq_reactor *r);
/* Make the reactor's fd readable (something changed outside its fds). */
void rmq_reactor_kick(struct rmq_reactor *r);
/*
 * Take in everything there is now (the CQ, the sources) and rearm: the
 * CQ wait fd, the kick and the timer are quiet afterwards until something
 * new happens.
 */
void rmq_reactor_settle(struct rmq_reactor *r);

/* Drain the CQ (and run the after-pass hooks); returns completions. */
int rmq_reactor_drain(struct rmq_reactor *r);
/* The armed after-pass hooks (what a pass sends last: coalesced batches,
 * records a link held back), as drain runs them. */
void rmq_reactor_after_run(struct rmq_reactor *r);
/* Drain the CQ; about every millisecond also poll the sources and run the
 * timers.  Returns the events handled. */
int rmq_reactor_progress(struct rmq_reactor *r);
/* The same, reading the clock every time: for calls made seldom (a PUB's
 * send), whose sources must still be polled once a millisecond passed. */
int rmq_reactor_progress_timed(struct rmq_reactor *r);
/* The sources and timers only, if a millisecond passed since they last
 * ran (a dead peer's closed control channel): for a caller that makes no
 * progress round itself, such as a stream of sends that never wait. */
int rmq_reactor_poll_due(struct rmq_reactor *r);
/* The same, the sources polled now (the context thread, woken by one). */
int rmq_reactor_serve(struct rmq_reactor *r);

/*
 * A wait with a timeout.  The clock is read only once waiting really
 * starts (most sends and receives never wait), then every 64 spins.
 */
struct rmq_waiter {
	int64_t  start;      /* 0 until the first idle round */
	int64_t  deadline;
	int      timeout_ms; /* -1 forever */
	int      backoff_us;
	unsigned spins;
	bool     slept;      /* past spin_us: every idle round sleeps */
};
void rmq_waiter_init(struct rmq_waiter *w, int timeout_ms);

/*
 * One idle round: spin, then sleep (CQ wait fd and sources in poll(), or
 * short sleeps growing to 1 ms where there is no wait fd).  Returns
 * -RMQ_EAGAIN once the waiter's deadline passed, else 0.
 */
int rmq_reactor_idle(struct rmq_reactor *r, struct rmq_waiter *w);

/*
 * cond(arg): 1 = done, < 0 = that error, 0 = keep waiting.  Checked first,
 * then after every round that handled events.
 */
typedef int (*rmq_cond_fn)(void *arg);

#define RMQ_WAIT_IDLE 0x1u /* run the idle hook on idle rounds */

/*
 * Drive r until cond holds: 0, cond's error, or -RMQ_EAGAIN when w's
 * deadline passes.
 */
int rmq_wait_until(struct rmq_reactor *r, struct rmq_waiter *w, unsigned flags,
                   rmq_cond_fn cond, void *arg);

/*
 * The same over several reactors and foreign file descriptors (poll(2)
 * style; their revents are filled in whenever they were polled, so cond
 * may look at them): what rmq_poll() waits in.
 */
int rmq_wait_many(struct rmq_reactor *const *rs, int nr, struct pollfd *fds,
                  int nfds, struct rmq_waiter *w, unsigned flags,
                  rmq_cond_fn cond, void *arg);

#endif /* RMQ_PROGRESS_H */
