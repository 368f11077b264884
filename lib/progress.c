/*
 * The reactor (progress.h): drains the CQ and hands each completion to the
 * operation that was posted with it, polls registered file descriptors
 * about every millisecond, and runs timers.
 * Waiting on it is in wait.c.
 */
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "progress.h"
#include "rmq.h"
#include "util.h"

#define RMQ_CQ_BATCH     16
#define RMQ_POLL_STACK   64

void
rmq_reactor_init(struct rmq_reactor *r, void *owner)
{
	memset(r, 0, sizeof(*r));
	r->owner   = owner;
	r->cq_fd   = -1;
	r->ep_fd   = -1;
	r->kick_fd = -1;
	r->tick_fd = -1;
	r->watch_fd = -1;
	r->src_ep  = -1;
	atomic_init(&r->busy, 0);
	atomic_init(&r->app_in, 0);
	atomic_init(&r->thr_in, 0);
}

/* ---- the owner lock's thread side ---- */

static bool asym_ok;

static void
asym_init(void)
{
#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer does not see the order membarrier gives: it
	 * checks the atomic-flag lock instead. */
	asym_ok = false;
#else
	asym_ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
	                  0, 0) == 0;
#endif
}

bool
rmq_reactor_asym_ok(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, asym_init);
	return asym_ok;
}

bool
rmq_reactor_trylock(struct rmq_reactor *r)
{
	if (!r->asym)
		return atomic_load_explicit(&r->busy, memory_order_relaxed) == 0 &&
		       !atomic_exchange_explicit(&r->busy, 1,
		                                 memory_order_acquire);
	if (atomic_load(&r->app_in))
		return false;
	atomic_store(&r->thr_in, 1);
	/* Every thread of ours passes a full barrier: either the
	 * application's app_in = 1 is visible now, or its next load of
	 * thr_in sees 1. */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0 ||
	    atomic_load(&r->app_in)) {
		atomic_store(&r->thr_in, 0);
		return false;
	}
	return true;
}

void
rmq_reactor_unlock_thr(struct rmq_reactor *r)
{
	if (r->asym)
		atomic_store_explicit(&r->thr_in, 0, memory_order_release);
	else
		atomic_store_explicit(&r->busy, 0, memory_order_release);
}

void
rmq_reactor_fini(struct rmq_reactor *r)
{
	free(r->srcs);
	r->srcs  = NULL;
	r->nsrcs = r->srcs_cap = 0;
	r->timers = NULL;
	if (r->ep_fd >= 0)
		close(r->ep_fd);
	if (r->kick_fd >= 0)
		close(r->kick_fd);
	if (r->tick_fd >= 0)
		close(r->tick_fd);
	if (r->src_ep >= 0)
		close(r->src_ep);
	r->ep_fd = r->kick_fd = r->tick_fd = r->src_ep = -1;
}

/* ---- RMQ_FD ---- */

static void
ep_add(struct rmq_reactor *r, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN};

	if (r->ep_fd >= 0 && fd >= 0)
		(void) epoll_ctl(r->ep_fd, EPOLL_CTL_ADD, fd, &ev);
}

static void
ep_del(struct rmq_reactor *r, int fd)
{
	if (r->ep_fd >= 0 && fd >= 0)
		(void) epoll_ctl(r->ep_fd, EPOLL_CTL_DEL, fd, NULL);
}

/* The timer of the set, made (and added) at the first need; -1 if not. */
static int
tick_open(struct rmq_reactor *r)
{
	if (r->tick_fd < 0) {
		r->tick_fd = timerfd_create(CLOCK_MONOTONIC,
		                            TFD_NONBLOCK | TFD_CLOEXEC);
		ep_add(r, r->tick_fd);
	}
	return r->tick_fd;
}

/*
 * The CQ's part of the set: its wait fd, or where the provider has none
 * (shm), a timer that makes the set readable every millisecond so that
 * a loop around RMQ_FD still looks at the CQ.
 */
static void
ep_cq(struct rmq_reactor *r, int old_cq_fd)
{
	struct itimerspec its = {.it_interval = {0, 1000000},
	                         .it_value    = {0, 1000000}};

	if (r->ep_fd < 0)
		return;
	ep_del(r, old_cq_fd);
	if (r->tick_fd >= 0) {
		close(r->tick_fd); /* closing takes it out of the set */
		r->tick_fd = -1;
	}
	if (r->cq == NULL)
		return;
	if (r->cq_fd >= 0) {
		ep_add(r, r->cq_fd);
		return;
	}
	if (tick_open(r) >= 0)
		(void) timerfd_settime(r->tick_fd, 0, &its, NULL);
}

int
rmq_reactor_fd(struct rmq_reactor *r)
{
	int i;

	if (r->ep_fd >= 0)
		return r->ep_fd;
	r->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r->ep_fd   = epoll_create1(EPOLL_CLOEXEC);
	if (r->kick_fd < 0 || r->ep_fd < 0) {
		i = -errno;
		if (r->kick_fd >= 0)
			close(r->kick_fd);
		if (r->ep_fd >= 0)
			close(r->ep_fd);
		r->kick_fd = r->ep_fd = -1;
		return i;
	}
	ep_add(r, r->kick_fd);
	for (i = 0; i < r->nsrcs; i++)
		if (r->srcs[i] != NULL)
			ep_add(r, r->srcs[i]->fd);
	ep_cq(r, -1);
	return r->ep_fd;
}

void
rmq_reactor_kick(struct rmq_reactor *r)
{
	uint64_t one = 1;

	if (r->kick_fd >= 0)
		(void) !write(r->kick_fd, &one, sizeof(one));
}

void
rmq_reactor_set_cq(struct rmq_reactor *r, struct fid_cq *cq, int cq_fd,
                   struct fid_fabric *fabric, bool rx_cq_data)
{
	int old = r->cq_fd;

	r->cq         = cq;
	r->cq_fd      = cq != NULL ? cq_fd : -1;
	r->cq_quiet   = false;
	r->quiet_hist = 0;
	r->fabric     = fabric;
	r->rx_cq_data = rx_cq_data;
	ep_cq(r, old);
}

int
rmq_reactor_after(struct rmq_reactor *r, void (*fn)(void *owner))
{
	int i;

	for (i = 0; i < r->nafter; i++)
		if (r->after[i] == fn)
			return i; /* once is enough */
	if (r->nafter == RMQ_REACTOR_AFTER_MAX)
		return -RMQ_ENOMEM;
	r->after[r->nafter] = fn;
	return r->nafter++;
}

/* ---- sources and timers ---- */

/*
 * src's entry in the sources' epoll set (op: add, or its index changed),
 * made at the first source.  Any failure gives the set up for good: the
 * rounds then poll every source, as they would without it.
 */
static void
src_ep_set(struct rmq_reactor *r, struct rmq_source *src, int op)
{
	struct epoll_event ev = {.events = EPOLLIN,
	                         .data.u64 = (uint64_t) src->idx};

	if (r->src_ep_bad)
		return;
	if (r->src_ep < 0 &&
	    (r->src_ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		r->src_ep_bad = true;
		return;
	}
	if (epoll_ctl(r->src_ep, op, src->fd, &ev) != 0) {
		rmq_log(RMQ_LOG_DEBUG, "sources' epoll set given up: fd %d: %s",
		        src->fd, strerror(errno));
		close(r->src_ep);
		r->src_ep     = -1;
		r->src_ep_bad = true;
	}
}

int
rmq_source_add(struct rmq_reactor *r, struct rmq_source *src, int fd,
               void (*ready)(struct rmq_source *, short, void *))
{
	struct rmq_source **n;
	int                 cap;

	if (r->nsrcs == r->srcs_cap) {
		cap = r->srcs_cap ? 2 * r->srcs_cap : 16;
		n   = realloc(r->srcs, (size_t) cap * sizeof(*n));
		if (n == NULL)
			return -RMQ_ENOMEM;
		r->srcs     = n;
		r->srcs_cap = cap;
	}
	src->fd      = fd;
	src->ready   = ready;
	src->watched = false;
	src->idx     = r->nsrcs;
	r->srcs[r->nsrcs++] = src;
	ep_add(r, fd);
	src_ep_set(r, src, EPOLL_CTL_ADD);
	return 0;
}

/* Close the holes removals left while dispatching. */
static void
sources_compact(struct rmq_reactor *r)
{
	int i, j;

	for (i = 0, j = 0; i < r->nsrcs; i++)
		if (r->srcs[i] != NULL) {
			r->srcs[j]      = r->srcs[i];
			r->srcs[j]->idx = j;
			if (j != i)
				src_ep_set(r, r->srcs[j], EPOLL_CTL_MOD);
			j++;
		}
	r->nsrcs = j;
}

void
rmq_source_remove(struct rmq_reactor *r, struct rmq_source *src)
{
	struct rmq_source *last;

	if (src->idx < 0 || src->idx >= r->nsrcs || r->srcs[src->idx] != src)
		return;
	ep_del(r, src->fd);
	if (r->src_ep >= 0)
		(void) epoll_ctl(r->src_ep, EPOLL_CTL_DEL, src->fd, NULL);
	if (src->watched)
		(void) epoll_ctl(r->watch_fd, EPOLL_CTL_DEL, src->fd, NULL);
	src->watched = false;
	if (r->dispatching > 0) {
		/* The round's indices must hold: a hole, closed after it. */
		r->srcs[src->idx] = NULL;
		r->holes          = true;
	} else {
		/* The last one takes its place: order does not matter. */
		last = r->srcs[--r->nsrcs];
		r->srcs[src->idx] = last;
		if (last != src) {
			last->idx = src->idx;
			src_ep_set(r, last, EPOLL_CTL_MOD);
		}
	}
	src->idx = -1;
}

void
rmq_source_watch(struct rmq_reactor *r, struct rmq_source *src)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = r};

	if (r->watch_fd >= 0 && src->idx >= 0)
		src->watched = epoll_ctl(r->watch_fd, EPOLL_CTL_ADD, src->fd,
		                         &ev) == 0;
}

void
rmq_timer_add(struct rmq_reactor *r, struct rmq_timer *t,
              void (*run)(struct rmq_timer *, int64_t, void *))
{
	t->run   = run;
	t->when  = INT64_MAX;
	t->next  = r->timers;
	r->timers = t;
}

void
rmq_timer_remove(struct rmq_reactor *r, struct rmq_timer *t)
{
	struct rmq_timer **pp;

	for (pp = &r->timers; *pp != NULL; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
}

int64_t
rmq_timers_next(const struct rmq_reactor *r)
{
	const struct rmq_timer *t;
	int64_t                 when = INT64_MAX;

	for (t = r->timers; t != NULL; t = t->next)
		if (t->when < when)
			when = t->when;
	return when;
}

static void
timers_run(struct rmq_reactor *r)
{
	struct rmq_timer *t, *next;
	int64_t           now = rmq_now_ns();

	/* A timer may remove itself while it runs, not another one. */
	for (t = r->timers; t != NULL; t = next) {
		next = t->next;
		t->run(t, now, r->owner);
	}
	r->timer_due = rmq_timers_next(r);
}

void
rmq_timer_set(struct rmq_reactor *r, struct rmq_timer *t, int64_t when)
{
	t->when = when;
	if (when < r->timer_due)
		r->timer_due = when;
}

#define RMQ_SRC_EP      (-2) /* a poll set's entry: r's sources' set */
#define RMQ_SRC_EP_MAX  64   /* events taken from it per epoll_wait */

static void
source_ready(struct rmq_reactor *r, int idx, int fd, short revents)
{
	struct rmq_source *src;

	if (idx < 0 || idx >= r->nsrcs)
		return;
	src = r->srcs[idx];
	if (src == NULL || src->fd != fd)
		return; /* removed meanwhile */
	src->ready(src, revents, r->owner);
}

/* Call the sources of r whose fds in fds[0..n) (built by pollset_build)
 * are ready; n counts r's entries.  Returns the events. */
static int
sources_dispatch(struct rmq_reactor *r, const struct pollfd *fds,
                 const int *idx, int n)
{
	struct epoll_event ev[RMQ_SRC_EP_MAX];
	int                i, k, got, events = 0;

	r->dispatching++;
	for (i = 0; i < n; i++) {
		if (fds[i].revents == 0)
			continue;
		if (idx[i] != RMQ_SRC_EP) {
			if (idx[i] >= 0) {
				source_ready(r, idx[i], fds[i].fd,
				             fds[i].revents);
				events++;
			}
			continue;
		}
		/* The set's entries carry their index; indices hold until
		 * the round ends (a removal leaves a hole).  EPOLLIN, ERR
		 * and HUP are poll's bits. */
		got = epoll_wait(fds[i].fd, ev, RMQ_SRC_EP_MAX, 0);
		for (k = 0; k < got; k++) {
			int j = (int) ev[k].data.u64;

			if (j >= 0 && j < r->nsrcs && r->srcs[j] != NULL)
				source_ready(r, j, r->srcs[j]->fd,
				             (short) ev[k].events);
			events++;
		}
	}
	if (--r->dispatching == 0 && r->holes) {
		sources_compact(r);
		r->holes = false;
	}
	return events;
}

/*
 * The poll set of several reactors and foreign fds: per reactor its
 * sources, then (with_cq) its CQ wait fd; then the foreign fds.
 */
struct pollset {
	struct pollfd  stack_fds[RMQ_POLL_STACK];
	int            stack_idx[RMQ_POLL_STACK];
	struct pollfd *fds;
	int           *idx;  /* source index, -1 for a CQ fd or foreign,
	                      * RMQ_SRC_EP for a reactor's sources' set */
	int           *nsrc; /* per reactor: its entries (sources + CQ) */
	int            n;
};

static int
pollset_build(struct pollset *ps, struct rmq_reactor *const *rs, int nr,
              bool with_cq, const struct pollfd *foreign, int nfds,
              int *nsrc)
{
	int i, j, cap = nfds;

	for (i = 0; i < nr; i++)
		cap += (rs[i]->src_ep >= 0 ? 1 : rs[i]->nsrcs) + 1;
	ps->fds  = ps->stack_fds;
	ps->idx  = ps->stack_idx;
	ps->nsrc = nsrc;
	if (cap > RMQ_POLL_STACK) {
		ps->fds = calloc((size_t) cap, sizeof(*ps->fds));
		ps->idx = calloc((size_t) cap, sizeof(*ps->idx));
		if (ps->fds == NULL || ps->idx == NULL) {
			free(ps->fds);
			free(ps->idx);
			return -RMQ_ENOMEM;
		}
	}
	ps->n = 0;
	for (i = 0; i < nr; i++) {
		struct rmq_reactor *r = rs[i];
		int                 start = ps->n;

		if (r->src_ep >= 0) {
			ps->fds[ps->n] = (struct pollfd){.fd = r->src_ep,
			                                 .events = POLLIN};
			ps->idx[ps->n++] = RMQ_SRC_EP;
		}
		for (j = 0; r->src_ep < 0 && j < r->nsrcs; j++) {
			if (r->srcs[j] == NULL)
				continue;
			ps->fds[ps->n] = (struct pollfd){.fd = r->srcs[j]->fd,
			                                 .events = POLLIN};
			ps->idx[ps->n++] = j;
		}
		if (with_cq && r->cq_fd >= 0) {
			ps->fds[ps->n] = (struct pollfd){.fd = r->cq_fd,
			                                 .events = POLLIN};
			ps->idx[ps->n++] = -1;
		}
		nsrc[i] = ps->n - start;
	}
	for (j = 0; j < nfds; j++) {
		ps->fds[ps->n]   = foreign[j];
		ps->fds[ps->n].revents = 0;
		ps->idx[ps->n++] = -1;
	}
	return 0;
}

static void
pollset_free(struct pollset *ps)
{
	if (ps->fds != ps->stack_fds) {
		free(ps->fds);
		free(ps->idx);
	}
}

/*
 * Poll the sources of rs (and with_cq their CQ wait fds) and the foreign
 * fds for up to timeout_ms, call the ready sources, run every reactor's
 * timers.  Returns the events handled.
 */
int
rmq_poll_round(struct rmq_reactor *const *rs, int nr, bool with_cq,
               struct pollfd *foreign, int nfds, int timeout_ms)
{
	struct pollset ps;
	int            nsrc_stack[8], *nsrc = nsrc_stack;
	int            i, off, rc, events = 0;

	if (nr > 8 && (nsrc = calloc((size_t) nr, sizeof(*nsrc))) == NULL)
		return 0;
	if (pollset_build(&ps, rs, nr, with_cq, foreign, nfds, nsrc) != 0)
		goto out;
	/* With nothing to poll, poll() is a sleep of timeout_ms. */
	rc = poll(ps.fds, (nfds_t) ps.n, timeout_ms);
	for (i = 0; i < nfds; i++)
		foreign[i].revents = rc > 0 ? ps.fds[ps.n - nfds + i].revents : 0;
	for (i = 0, off = 0; i < nr; off += nsrc[i], i++) {
		/* A sleep with the CQ's wait fd that nothing ended. */
		if (with_cq && timeout_ms != 0 && rs[i]->cq_fd >= 0)
			rs[i]->cq_quiet = rc == 0;
		if (rc > 0)
			events += sources_dispatch(rs[i], ps.fds + off,
			                           ps.idx + off, nsrc[i]);
		timers_run(rs[i]);
	}
	pollset_free(&ps);
out:
	if (nsrc != nsrc_stack)
		free(nsrc);
	return events;
}

/* ---- the CQ ---- */

/* Only at the target: the sockets provider also flags our own
 * writedata's completion with FI_REMOTE_CQ_DATA (with FI_WRITE),
 * measured. */
static bool
is_remote_write(uint64_t flags, int err)
{
	return (flags & FI_REMOTE_CQ_DATA) && err == 0 &&
	       !(flags & (FI_WRITE | FI_SEND | FI_READ)) &&
	       (!(flags & FI_RECV) || (flags & (FI_RMA | FI_REMOTE_WRITE)));
}

static void
dispatch(struct rmq_reactor *r, void *ctx, const struct rmq_cqe *e)
{
	struct rmq_op *op = ctx;

	if (is_remote_write(e->flags, e->err)) {
		if (r->on_imm != NULL)
			r->on_imm(r->owner, e->data);
		/*
		 * op_context is ours only where the provider consumed one of
		 * our receives for it (FI_RX_CQ_DATA in the mode it returned);
		 * shm 1.17 puts a foreign value there otherwise (measured).
		 */
		if (r->rx_cq_data && op != NULL && (op->flags & RMQ_OP_F_RECV)) {
			struct rmq_cqe only = {.flags = e->flags & FI_MULTI_RECV};

			op->done(op, &only, r->owner);
		}
		return;
	}
	if (op == NULL) {
		if (e->err != 0 && r->orphan != NULL)
			r->orphan->done(r->orphan, e, r->owner);
		else if (e->err != 0)
			rmq_log(RMQ_LOG_WARN, "completion error without a "
			        "context: %s", fi_strerror(-e->err));
		return;
	}
	op->done(op, e, r->owner);
}

/*
 * After a sleep on the CQ's wait fd that it did not end: did the drain
 * find a message that had come in all the same?  Once in a while one
 * lands between the poll's timeout and this read; three of the last
 * eight such sleeps mean a wait fd that does not wake us (libfabric
 * 1.17's tcp;ofi_rxm with FI_OFI_RXM_DEF_TCP_WAIT_OBJ=pollfd hands one
 * out, measured: 64 B round trips of milliseconds, INTERNALS §17).
 * The socket then sleeps as where there is none (shm): in short steps,
 * and a 1 ms timer in the RMQ_FD set.
 */
static void
heard(struct rmq_reactor *r, bool late)
{
	int old = r->cq_fd, nlate;

	r->cq_quiet   = false;
	r->quiet_hist = (uint8_t) (r->quiet_hist << 1 | (late ? 1 : 0));
	if (!late)
		return;
	nlate = __builtin_popcount(r->quiet_hist);
	rmq_log(RMQ_LOG_DEBUG, "a message came in while the CQ wait fd "
	        "stayed silent (%d of the last 8 sleeps on it)", nlate);
	if (nlate < 3)
		return;
	rmq_log(RMQ_LOG_WARN, "the completion queue's wait fd did not wake "
	        "us for messages that had come in (3 of the last 8 sleeps "
	        "on it): this socket sleeps in short steps from now on, as "
	        "with progress.wait_fd: false");
	r->cq_fd = -1;
	ep_cq(r, old);
}

int
rmq_reactor_drain(struct rmq_reactor *r)
{
	struct fi_cq_data_entry ent[RMQ_CQ_BATCH];
	struct fi_cq_err_entry  err;
	struct rmq_cqe          e;
	ssize_t                 n;
	int                     i, total = 0, rx = 0;

	if (r->mem_on)
		total += r->mem_poll(r->owner);
	r->cq_got = 0;
	if (r->cq == NULL)
		return total;
	for (;;) {
		n = fi_cq_read(r->cq, ent, RMQ_CQ_BATCH);
		if (n > 0) {
			for (i = 0; i < n; i++) {
				e = (struct rmq_cqe){.flags = ent[i].flags,
				                     .buf   = ent[i].buf,
				                     .len   = ent[i].len,
				                     .data  = ent[i].data};
				/* Only after a silent sleep (heard()). */
				if (r->cq_quiet)
					rx += (ent[i].flags & FI_RECV) ||
					      is_remote_write(ent[i].flags, 0);
				dispatch(r, ent[i].op_context, &e);
			}
			total += (int) n;
			r->cq_got += (int) n;
			if (n < RMQ_CQ_BATCH)
				break;
			continue;
		}
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(r->cq, &err, 0) != 1)
				break;
			/* Some providers (shm 1.17's fast RMA) put a negative
			 * code in err.err: normalise, and never let it be 0. */
			e     = (struct rmq_cqe){.flags = err.flags};
			e.err = (int) err.err;
			e.err = e.err > 0 ? -e.err : e.err == 0 ? -FI_EIO : e.err;
			dispatch(r, err.op_context, &e);
			total++;
			r->cq_got++;
			continue;
		}
		if (n != -FI_EAGAIN)
			rmq_log(RMQ_LOG_ERROR, "fi_cq_read: %s",
			        fi_strerror((int) -n));
		break;
	}
	if (r->cq_quiet)
		heard(r, rx > 0);
	rmq_reactor_after_run(r);
	return total;
}

void
rmq_reactor_after_run(struct rmq_reactor *r)
{
	int i;

	/* Usually none is armed: one load and a branch per pass. */
	for (i = 0; r->after_armed != 0 && i < r->nafter; i++)
		if (r->after_armed & (1u << i))
			r->after[i](r->owner);
}

/* The sources and timers, if a millisecond passed since they last ran. */
static int
poll_if_due(struct rmq_reactor *r)
{
	int64_t now = rmq_now_ns();

	if (now < r->next_poll) {
		/* A timer asked for sooner (a log reader's next look). */
		if (now >= r->timer_due)
			timers_run(r);
		return 0;
	}
	r->next_poll = now + RMQ_POLL_NS;
	return rmq_poll_round(&r, 1, false, NULL, 0, 0);
}

int
rmq_reactor_poll_due(struct rmq_reactor *r)
{
	return poll_if_due(r);
}

int
rmq_reactor_progress_timed(struct rmq_reactor *r)
{
	int n = rmq_reactor_drain(r);

	return n + poll_if_due(r);
}

int
rmq_reactor_serve(struct rmq_reactor *r)
{
	r->next_poll = 0;
	return rmq_reactor_progress_timed(r);
}

int
rmq_reactor_progress(struct rmq_reactor *r)
{
	int n;

	/* With a memory source, most rounds look at it only: a CQ read can
	 * be a system call (tcp;ofi_rxm's), most of a same-host round trip
	 * when every round made one; the CQ, the hooks and the timers every
	 * 16th.  While every live peer is reached through the source and the
	 * CQ has had nothing, less and less often, down to one round in
	 * RMQ_MEM_CQ_MAX (connections and the fi_read fallback still
	 * progress; a peer elsewhere brings back the 16).  Figures:
	 * docs/INTERNALS.md §4, local, and §17. */
	if (r->mem_on && (++r->mticks & r->mmask) != 0) {
		n = r->mem_poll(r->owner);
		/* The rest of a draining round keeps its pace: the hooks
		 * every 16th, sources and timers (a dead peer's closed
		 * control channel) every 512th. */
		if ((r->mticks & 15) == 0) {
			rmq_reactor_after_run(r);
			if ((++r->ticks & 31) == 0)
				n += poll_if_due(r);
		}
		return n;
	}
	n = rmq_reactor_drain(r);
	if (r->mem_on) {
		if (r->cq_got > 0 || !r->mem_only(r->owner))
			r->mmask = 15;
		else if (r->mmask < RMQ_MEM_CQ_MAX - 1)
			r->mmask = r->mmask * 2 + 1;
	}

	/* The clock costs as much as an empty CQ poll: look every 32nd. */
	if ((++r->ticks & 31) != 0)
		return n;
	return n + poll_if_due(r);
}

/*
 * Where the CQ has a wait fd, tcp;ofi_rxm 1.17 does not always make it
 * readable: measured, a stream that starts while the receiver sleeps on it
 * (the provider's connection comes up inside its progress) sat unseen
 * until the receiver looked for another reason (INTERNALS §17).  The
 * reactor's own sleeps are capped at RMQ_SLEEP_MAX_MS for the same reason.
 * So the RMQ_FD set has a timer here too: 1 ms after a settle that found
 * traffic, doubling while settles find none, up to RMQ_SLEEP_MAX_MS (an
 * idle socket wakes its loop ten times a second).  Without a wait fd
 * (shm) the timer ticks every millisecond.
 */
static void
tick_arm(struct rmq_reactor *r, bool traffic)
{
	struct itimerspec its = {{0, 0}, {0, 0}};

	if (r->cq_fd < 0)
		return; /* the periodic tick of ep_cq() */
	r->tick_ms = traffic || r->tick_ms == 0 ? 1
	             : r->tick_ms * 2 > RMQ_SLEEP_MAX_MS ? RMQ_SLEEP_MAX_MS
	                                                 : r->tick_ms * 2;
	its.it_value.tv_sec  = r->tick_ms / 1000;
	its.it_value.tv_nsec = (long) (r->tick_ms % 1000) * 1000000;
	if (tick_open(r) >= 0)
		(void) timerfd_settime(r->tick_fd, 0, &its, NULL);
}

void
rmq_reactor_settle(struct rmq_reactor *r)
{
	struct fid *fids[1];
	uint64_t    v;
	int         k, n = 0, got;

	if (r->kick_fd >= 0)
		(void) !read(r->kick_fd, &v, sizeof(v));
	if (r->tick_fd >= 0)
		(void) !read(r->tick_fd, &v, sizeof(v));
	for (k = 0; k < 8; k++) {
		while ((got = rmq_reactor_drain(r)) > 0)
			n += got;
		r->next_poll = rmq_now_ns() + RMQ_POLL_NS;
		n += rmq_poll_round(&r, 1, false, NULL, 0, 0);
		/* The wait fd is rearmed only by a fi_trywait that finds
		 * nothing: until then it may stay readable. */
		if (r->cq == NULL || r->cq_fd < 0)
			break;
		fids[0] = &r->cq->fid;
		if (fi_trywait(r->fabric, fids, 1) == 0)
			break;
	}
	/* Peers on a memory source wake us through a source from now on;
	 * what they wrote before that is taken in now. */
	if (r->mem_on && r->mem_arm(r->owner) != 0)
		n += r->mem_poll(r->owner);
	if (r->ep_fd >= 0 && r->cq != NULL)
		tick_arm(r, n > 0);
}
