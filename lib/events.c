/*
 * rmq_poll() and the socket events (events.h).
 *
 * rmq_poll drives every socket it is given -- whatever the events asked
 * for, 0 included -- in one wait (rmq_wait_many): spin for spin_us, then
 * sleep in poll(2) on every socket's control fds, CQ wait fds and the
 * plain fds of the items.  Where a provider has no CQ wait fd (shm) the
 * sleep is short (backing off to 1 ms) and the CQs are looked at in
 * between: an idle wait there costs little CPU (measured:
 * docs/INTERNALS.md §17, "waiting").
 */
#include <limits.h>
#include <poll.h>
#include <stdlib.h>

#include "backlog.h"
#include "pattern_ops.h"
#include "events.h"
#include "frames.h"
#include "progress.h"
#include "rxq.h"
#include "socket.h"

#define POLL_STACK 16

int
rmq_sock_events(struct rmq_socket *s, bool settle)
{
	int ev;

	if (settle)
		rmq_reactor_settle(&s->reactor);
	if (s->bl_n > 0)
		rmq_backlog_flush(s);
	ev = s->pat->events(s->pstate, s);
	if (rmq_frames_rx_open(s))
		ev |= RMQ_EV_IN; /* the rest of a message taken in part */
	if (rmq_backlog_room(s))
		ev |= RMQ_EV_OUT; /* kept until a peer comes */
	return ((ev & RMQ_EV_IN) ? RMQ_POLLIN : 0) |
	       ((ev & RMQ_EV_OUT) ? RMQ_POLLOUT : 0);
}

void
rmq_sock_fd_after(struct rmq_socket *s)
{
	if (s->reactor.ep_fd >= 0 && (s->rx->nmsgs > 0 || rmq_frames_rx_open(s)))
		rmq_reactor_kick(&s->reactor);
}

struct poll_state {
	rmq_pollitem        *items;
	int                  nitems;
	struct pollfd       *fds;  /* the fd items', in item order */
	struct rmq_reactor **rs;   /* each socket once */
	int                  nr;
};

static short
fd_revents(short pr, short want)
{
	short r = 0;

	if ((pr & POLLIN) && (want & RMQ_POLLIN))
		r |= RMQ_POLLIN;
	if ((pr & POLLOUT) && (want & RMQ_POLLOUT))
		r |= RMQ_POLLOUT;
	if (pr & (POLLERR | POLLHUP | POLLNVAL))
		r |= RMQ_POLLERR;
	return r;
}

/* How many items are ready (their revents filled in). */
static int
poll_ready(void *arg)
{
	struct poll_state *ps = arg;
	rmq_pollitem      *it;
	int                i, k = 0, n = 0;

	for (i = 0; i < ps->nitems; i++) {
		it = &ps->items[i];
		if (it->socket != NULL)
			it->revents = (short) (rmq_sock_events(it->socket, false) &
			                       it->events);
		else
			it->revents = fd_revents(ps->fds[k++].revents,
			                         it->events);
		n += it->revents != 0;
	}
	return n > 0 ? 1 : 0;
}

static void
lock_all(struct poll_state *ps, bool lock)
{
	int i;

	for (i = 0; i < ps->nr; i++) {
		struct rmq_socket *s = ps->rs[i]->owner;

		if (lock)
			rmq_sock_lock(s);
		else
			rmq_sock_unlock(s);
	}
}

int
rmq_poll(rmq_pollitem *items, int nitems, long timeout_ms)
{
	struct pollfd        fds_stack[POLL_STACK];
	struct rmq_reactor  *rs_stack[POLL_STACK];
	struct poll_state    ps = {items, nitems, fds_stack, rs_stack, 0};
	struct rmq_waiter    w;
	int                  i, j, nfds = 0, rc, n = 0;

	if (nitems < 0 || (items == NULL && nitems > 0))
		return -RMQ_EINVAL;
	for (i = 0; i < nitems; i++) {
		if (items[i].socket == NULL && items[i].fd < 0)
			return -RMQ_EINVAL;
		if (items[i].socket != NULL &&
		    atomic_load(&items[i].socket->ctx->shut))
			return -RMQ_ECLOSED; /* rmq_ctx_shutdown */
		items[i].revents = 0;
	}
	if (nitems > POLL_STACK) {
		ps.fds = calloc((size_t) nitems, sizeof(*ps.fds));
		ps.rs  = calloc((size_t) nitems, sizeof(*ps.rs));
		if (ps.fds == NULL || ps.rs == NULL) {
			rc = -RMQ_ENOMEM;
			goto out;
		}
	}
	for (i = 0; i < nitems; i++) {
		if (items[i].socket == NULL) {
			ps.fds[nfds++] = (struct pollfd){
			    .fd     = items[i].fd,
			    .events = (short) (((items[i].events & RMQ_POLLIN)
			                            ? POLLIN
			                            : 0) |
			                       ((items[i].events & RMQ_POLLOUT)
			                            ? POLLOUT
			                            : 0))};
			continue;
		}
		for (j = 0; j < ps.nr; j++)
			if (ps.rs[j] == &items[i].socket->reactor)
				break;
		if (j == ps.nr)
			ps.rs[ps.nr++] = &items[i].socket->reactor;
	}
	/* The plain fds as they are now; then the sockets' progress. */
	if (nfds > 0 && poll(ps.fds, (nfds_t) nfds, 0) < 0) {
		rc = -errno;
		goto out;
	}
	lock_all(&ps, true);
	/* Every socket moves once, even when an item is ready already: a
	 * loop around a readable fd must not starve them. */
	for (i = 0; i < ps.nr; i++)
		(void) rmq_reactor_progress_timed(ps.rs[i]);
	rmq_waiter_init(&w, timeout_ms < 0        ? -1
	                    : timeout_ms > INT_MAX ? INT_MAX
	                                           : (int) timeout_ms);
	if (ps.nr == 0) {
		/* Plain fds only: poll(2) itself. */
		rc = poll_ready(&ps) ? 0
		     : poll(ps.fds, (nfds_t) nfds, w.timeout_ms) < 0 ? -errno
		                                                     : 0;
		(void) poll_ready(&ps);
	} else {
		rc = rmq_wait_many(ps.rs, ps.nr, ps.fds, nfds, &w,
		                   RMQ_WAIT_IDLE, poll_ready, &ps);
	}
	lock_all(&ps, false);
	if (rc == -RMQ_EAGAIN)
		rc = 0; /* the timeout: nothing ready */
	if (rc == 0)
		for (i = 0; i < nitems; i++)
			n += items[i].revents != 0;
out:
	if (ps.fds != fds_stack)
		free(ps.fds);
	if (ps.rs != rs_stack)
		free(ps.rs);
	return rc < 0 ? rc : n;
}
