/*
 * The progress engine: drains the socket's CQ, dispatches completions to
 * the slab, tx and read state machines, and every millisecond polls the
 * control channels (new peers, goodbyes, deaths).
 *
 * Waiting spins first: on this class of machine waking a sleeping process on
 * another CPU costs ~57 us, 50x a busy-poll round trip.  After spin_us it
 * sleeps in poll() on the CQ wait fd (after fi_trywait) and the control fds,
 * or, where the provider has no wait fd (shm), in short sleeps that back off
 * from 10 us to 1 ms.
 */
#include <sched.h>
#include <string.h>
#include <time.h>

#include "rmq_int.h"

#define RMQ_CQ_BATCH      16
#define RMQ_CTRL_POLL_NS  1000000 /* control channels every 1 ms */
#define RMQ_SLEEP_MAX_MS  100

static void
on_slab(struct rmq_socket *s, struct rmq_slab *sl, uint64_t flags,
        void *buf, size_t len, const uint64_t *data)
{
	if ((flags & FI_RECV) && buf != NULL && len > 0)
		rmq_xfer_rx(s, sl, buf, len, data);
	if (flags & FI_MULTI_RECV) {
		/* The provider is done with this slab. */
		sl->posted = false;
		s->nposted--;
	}
}

static void
on_tx(struct rmq_socket *s, struct rmq_tx *tx, int err)
{
	struct rmq_peer *p = tx->peer;

	tx->peer      = NULL;
	tx->next_free = s->tx_free;
	s->tx_free    = tx;
	s->inflight--;
	if (p == NULL)
		return;
	p->pending--;
	if (err != 0)
		rmq_peer_fail(s, p, err, "send failed");
	else
		rmq_peer_reap(s, p);
}

static void
on_read(struct rmq_read_op *ro, int err)
{
	if (err != 0 && ro->rd->status == 0)
		ro->rd->status = err;
	ro->rd->pending--;
}

static void
dispatch(struct rmq_socket *s, void *ctx, uint64_t flags, void *buf,
         size_t len, uint64_t data, int err)
{
	struct rmq_op *op = ctx;

	/*
	 * A peer's writedata landed.  Only at the target: the sockets
	 * provider also flags our own writedata's completion with
	 * FI_REMOTE_CQ_DATA (with FI_WRITE), measured.
	 */
	if ((flags & FI_REMOTE_CQ_DATA) && err == 0 &&
	    !(flags & (FI_WRITE | FI_SEND | FI_READ)) &&
	    (!(flags & FI_RECV) || (flags & (FI_RMA | FI_REMOTE_WRITE)))) {
		rmq_xfer_imm(s, data);
		/*
		 * op_context is ours only where the provider consumed one of
		 * our receives for it (FI_RX_CQ_DATA in the mode it returned);
		 * shm 1.17 puts a foreign value there otherwise (measured).
		 */
		if ((s->dom->caps.mode & FI_RX_CQ_DATA) && op != NULL &&
		    op->kind == RMQ_OP_SLAB)
			on_slab(s, (struct rmq_slab *) op,
			        flags & FI_MULTI_RECV, NULL, 0, NULL);
		return;
	}
	if (op == NULL) {
		/*
		 * shm 1.17's fast RMA path reports a failed read (a peer's
		 * bad address or key) with no context, synchronously inside
		 * fi_read: it can only be the fetch under way, and nothing
		 * will complete that op later.
		 */
		if (err != 0 && s->cur_read != NULL) {
			rmq_log(RMQ_LOG_WARN,
			        "rendezvous read failed: %s (no context)",
			        fi_strerror(-err));
			s->cur_read->status  = err;
			s->cur_read->pending = 0;
			s->cur_read->orphaned = true;
		}
		return;
	}
	switch (op->kind) {
	case RMQ_OP_SLAB:
		if (err != 0) {
			if (err != -FI_ECANCELED) {
				s->stats.proto_errors++;
				rmq_log(RMQ_LOG_WARN, "receive error: %s",
				        fi_strerror(-err));
			}
			on_slab(s, (struct rmq_slab *) op,
			        flags & FI_MULTI_RECV, NULL, 0, NULL);
			break;
		}
		on_slab(s, (struct rmq_slab *) op, flags, buf, len,
		        (flags & FI_REMOTE_CQ_DATA) ? &data : NULL);
		break;
	case RMQ_OP_TX:
		on_tx(s, (struct rmq_tx *) op, err);
		break;
	case RMQ_OP_READ:
		on_read((struct rmq_read_op *) op, err);
		break;
	case RMQ_OP_TSEND:
		rmq_rndv_tsend_done(s, (struct rmq_rndv_tx *) op, err);
		break;
	case RMQ_OP_WRITE:
		rmq_xfer_write_done(s, (struct rmq_write_op *) op, err);
		break;
	default:
		break;
	}
}

int
rmq_progress_cq(struct rmq_socket *s)
{
	struct fi_cq_data_entry ent[RMQ_CQ_BATCH];
	struct fi_cq_err_entry  err;
	ssize_t                 n;
	int                     i, e, total = 0;

	if (s->cq == NULL)
		return 0;
	for (;;) {
		n = fi_cq_read(s->cq, ent, RMQ_CQ_BATCH);
		if (n > 0) {
			for (i = 0; i < n; i++)
				dispatch(s, ent[i].op_context, ent[i].flags,
				         ent[i].buf, ent[i].len, ent[i].data, 0);
			total += (int) n;
			if (n < RMQ_CQ_BATCH)
				break;
			continue;
		}
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(s->cq, &err, 0) != 1)
				break;
			/* Some providers (shm 1.17's fast RMA) put a negative
			 * code in err.err: normalise, and never let it be 0. */
			e = (int) err.err;
			e = e > 0 ? -e : e == 0 ? -FI_EIO : e;
			dispatch(s, err.op_context, err.flags, NULL, 0, 0, e);
			total++;
			continue;
		}
		if (n != -FI_EAGAIN)
			rmq_log(RMQ_LOG_ERROR, "fi_cq_read: %s",
			        fi_strerror((int) -n));
		break;
	}
	if (s->nposted < s->ctx->cfg.slabs && s->ep != NULL)
		(void) rmq_slabs_replenish(s);
	if (s->cts_pending > 0)
		rmq_xfer_post_tsends(s);
	return total;
}

static void
closing_peers(struct rmq_socket *s, int64_t now)
{
	int i;

	for (i = 0; i < s->peers_cap; i++)
		if (s->peers[i] != NULL)
			rmq_ctrl_closing(s, s->peers[i], now);
}

int
rmq_progress(struct rmq_socket *s)
{
	int     n = rmq_progress_cq(s);
	int64_t now;

	/* The clock costs as much as an empty CQ poll: look every 32nd. */
	if ((++s->ticks & 31) != 0)
		return n;
	now = rmq_now_ns();
	if (now >= s->next_ctrl_poll) {
		s->next_ctrl_poll = now + RMQ_CTRL_POLL_NS;
		n += rmq_ctrl_poll(s, 0);
		closing_peers(s, now);
	}
	return n;
}

void
rmq_waiter_init(struct rmq_waiter *w, int timeout_ms)
{
	w->start      = 0;
	w->deadline   = INT64_MAX;
	w->timeout_ms = timeout_ms;
	w->backoff_us = 10;
	w->spins      = 0;
}

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

int
rmq_wait_idle(struct rmq_socket *s, struct rmq_waiter *w)
{
	int64_t         now, left;
	struct fid     *fids[1];
	struct timespec ts;
	int             ms;

	/*
	 * Spinning: read the clock only every 64th time round, and no pause
	 * instruction in between (it costs up to ~140 cycles on recent x86:
	 * that much later would we see the next completion).
	 */
	if (w->start != 0 && (++w->spins & 63) != 0 && w->timeout_ms < 0)
		return 0;
	now = rmq_now_ns();
	if (w->start == 0) {
		w->start = now;
		if (w->timeout_ms >= 0)
			w->deadline = now + (int64_t) w->timeout_ms * 1000000;
	}
	if (now >= w->deadline)
		return -RMQ_EAGAIN;
	if (now - w->start < (int64_t) s->spin_us * 1000) {
		cpu_relax();
		return 0;
	}
	left = w->deadline - now;
	ms   = left / 1000000 > RMQ_SLEEP_MAX_MS ? RMQ_SLEEP_MAX_MS
	                                         : (int) (left / 1000000) + 1;
	if (s->cq_fd >= 0) {
		fids[0] = &s->cq->fid;
		if (fi_trywait(s->dom->fabric, fids, 1) == 0) {
			s->next_ctrl_poll = now + RMQ_CTRL_POLL_NS;
			(void) rmq_ctrl_poll(s, ms);
			closing_peers(s, rmq_now_ns());
		}
		return 0;
	}
	/* No wait fd: short sleeps, growing; control fds on the way. */
	if (w->backoff_us >= 1000) {
		s->next_ctrl_poll = now + RMQ_CTRL_POLL_NS;
		(void) rmq_ctrl_poll(s, 1);
		closing_peers(s, rmq_now_ns());
		return 0;
	}
	ts.tv_sec  = 0;
	ts.tv_nsec = (long) w->backoff_us * 1000;
	nanosleep(&ts, NULL);
	w->backoff_us *= 2;
	return 0;
}
