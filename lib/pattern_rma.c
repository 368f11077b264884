/*
 * One-sided memory for a pattern (pattern.h): registered blocks a peer
 * reads or writes, reads and writes posted without waiting, a timer, and
 * messages a pattern brought in by itself.  PUB/SUB's log (FASTPS,
 * rmq_pubsub(7)) is built on these.
 *
 * An operation's completion calls its done(arg, status) from the CQ pass.
 * One freed while it is posted is parked on the socket's list and freed
 * at its completion, or when the socket closes (closing the endpoint
 * cancels it, without a completion).
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "conn/peer.h"
#include "ep.h"
#include "numa.h"
#include "paths/rndv.h"
#include "paths/tx.h"
#include "pattern.h"
#include "progress.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

struct rmq_pat_mem {
	struct rmq_socket  *s;
	uint8_t            *buf;
	size_t              len;
	struct rmq_numa_mem mem;  /* how buf was allocated (numa: not heap) */
	bool                heap;
	struct fid_mr      *mr;
	void               *desc;
	uint64_t            key;
};

struct rmq_pat_rma {
	struct rmq_op       op; /* first: its fi_context2 */
	struct rmq_socket  *s;
	void              (*done)(void *arg, int status);
	void               *arg;
	bool                busy;
	bool                parked;
	struct rmq_pat_rma *next; /* parked: the socket's list */
};

struct rmq_pat_timer {
	struct rmq_timer    t; /* first */
	struct rmq_socket  *s;
	void              (*fn)(void *arg, int64_t now);
	void               *arg;
};

int
rmq_pat_fanout_log(const struct rmq_socket *s)
{
	return s->paths.fanout_log;
}

void
rmq_pat_log_shape(const struct rmq_socket *s, uint32_t *slots,
                  uint32_t *slot_size)
{
	*slots     = (uint32_t) s->ctx->cfg.fanout_slots;
	*slot_size = (uint32_t) (s->ctx->cfg.fanout_slot_size & ~(size_t) 7);
}

static uint64_t
fi_access(unsigned access)
{
	switch (access) {
	case RMQ_PAT_REMOTE_READ:
		return FI_REMOTE_READ;
	case RMQ_PAT_REMOTE_WRITE:
		return FI_REMOTE_WRITE;
	case RMQ_PAT_READ_INTO:
		return FI_READ;
	default:
		return FI_WRITE;
	}
}

static int
mem_reg(struct rmq_pat_mem *m, unsigned access)
{
	struct rmq_socket *s = m->s;

	/* Local memory needs a descriptor only with FI_MR_LOCAL. */
	if ((access == RMQ_PAT_READ_INTO || access == RMQ_PAT_WRITE_FROM) &&
	    !s->dom->caps.mr_local)
		return 0;
	return rmq_mr_reg(s, m->buf, m->len, fi_access(access), &m->mr,
	                  &m->desc, &m->key);
}

int
rmq_pat_mem_new(struct rmq_socket *s, size_t len, unsigned access,
                struct rmq_pat_mem **mp)
{
	struct rmq_pat_mem *m = calloc(1, sizeof(*m));
	int                 rc;

	if (m == NULL)
		return -RMQ_ENOMEM;
	m->s   = s;
	m->len = len;
	m->buf = rmq_numa_alloc(&s->ctx->numa, &s->dom->place, len, &m->mem);
	if (m->buf == NULL) {
		free(m);
		return -RMQ_ENOMEM;
	}
	memset(m->buf, 0, len);
	rc = mem_reg(m, access);
	if (rc != 0) {
		rmq_numa_free(m->buf, &m->mem);
		free(m);
		return rc;
	}
	*mp = m;
	return 0;
}

int
rmq_pat_mem_wrap(struct rmq_socket *s, void *heap, size_t len,
                 unsigned access, struct rmq_pat_mem **mp)
{
	struct rmq_pat_mem *m = calloc(1, sizeof(*m));
	int                 rc;

	if (m == NULL)
		return -RMQ_ENOMEM;
	m->s    = s;
	m->buf  = heap;
	m->len  = len;
	m->heap = true;
	rc      = mem_reg(m, access);
	if (rc != 0) {
		free(m);
		return rc;
	}
	*mp = m;
	return 0;
}

void *
rmq_pat_mem_unwrap(struct rmq_pat_mem *m)
{
	void *b = m->buf;

	if (m->mr != NULL)
		fi_close(&m->mr->fid);
	free(m);
	return b;
}

void
rmq_pat_mem_free(struct rmq_pat_mem *m)
{
	if (m == NULL)
		return;
	if (m->mr != NULL)
		fi_close(&m->mr->fid);
	if (m->heap)
		free(m->buf);
	else
		rmq_numa_free(m->buf, &m->mem);
	free(m);
}

void *
rmq_pat_mem_buf(const struct rmq_pat_mem *m)
{
	return m->buf;
}

void
rmq_pat_mem_remote(const struct rmq_pat_mem *m, uint64_t *addr,
                   uint64_t *key)
{
	/* Without FI_MR_VIRT_ADDR a remote address is an offset. */
	*addr = m->s->dom->caps.mr_virt_addr ? (uint64_t) (uintptr_t) m->buf
	                                     : 0;
	*key  = m->key;
}

/* ---- operations ---- */

static void
rma_done(struct rmq_op *op, const struct rmq_cqe *e, void *owner)
{
	struct rmq_pat_rma *r = (struct rmq_pat_rma *) op;
	struct rmq_pat_rma **pp;

	RMQ_UNUSED(owner);
	r->busy = false;
	if (r->parked) {
		for (pp = &r->s->rma_parked; *pp != NULL; pp = &(*pp)->next)
			if (*pp == r) {
				*pp = r->next;
				break;
			}
		free(r);
		return;
	}
	if (e->err != 0)
		rmq_log(RMQ_LOG_DEBUG, "one-sided operation failed: %s",
		        fi_strerror(-e->err));
	r->done(r->arg, e->err != 0 ? -RMQ_ECONNRESET : 0);
}

struct rmq_pat_rma *
rmq_pat_rma_new(struct rmq_socket *s, void (*done)(void *arg, int status),
                void *arg)
{
	struct rmq_pat_rma *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	rmq_op_init(&r->op, rma_done, 0);
	r->s    = s;
	r->done = done;
	r->arg  = arg;
	return r;
}

bool
rmq_pat_rma_busy(const struct rmq_pat_rma *r)
{
	return r->busy;
}

void
rmq_pat_rma_free(struct rmq_pat_rma *r)
{
	if (r == NULL)
		return;
	if (!r->busy || r->s->ep == NULL) {
		free(r);
		return;
	}
	r->parked        = true;
	r->next          = r->s->rma_parked;
	r->s->rma_parked = r;
}

void
rmq_pat_rma_close(struct rmq_socket *s)
{
	struct rmq_pat_rma *r;

	/* The endpoint is closed: nothing parked completes any more. */
	while ((r = s->rma_parked) != NULL) {
		s->rma_parked = r->next;
		free(r);
	}
}

static int
rma_post(struct rmq_pat_rma *r, struct rmq_peer *p, bool write,
         struct rmq_pat_mem *m, size_t off, size_t len, uint64_t raddr,
         uint64_t rkey)
{
	struct rmq_socket *s = r->s;
	const char        *what = write ? "fi_write" : "fi_read";
	ssize_t            rc;

	if (r->busy || s->ep == NULL || off + len > m->len)
		return -RMQ_EINVAL;
	if (p->state == RMQ_PEER_DEAD)
		return -RMQ_ECONNRESET;
	rc = rmq_strict_desc(s, m->desc, what);
	if (rc != 0)
		return (int) rc;
	if (write)
		rc = fi_write(rmq_peer_ep(s, p), m->buf + off, len, m->desc, p->fiaddr,
		              raddr, rkey, &r->op.fctx);
	else
		rc = fi_read(rmq_peer_ep(s, p), m->buf + off, len, m->desc, p->fiaddr,
		             raddr, rkey, &r->op.fctx);
	if (rc == -FI_EAGAIN)
		return -RMQ_EAGAIN; /* the provider is busy: again later */
	if (rc != 0) {
		rmq_log(RMQ_LOG_DEBUG, "%s to %s: %s", what, p->name,
		        fi_strerror((int) -rc));
		return (int) rc;
	}
	r->busy = true;
	return 0;
}

int
rmq_pat_read(struct rmq_pat_rma *r, struct rmq_peer *p,
             struct rmq_pat_mem *dst, size_t off, size_t len, uint64_t raddr,
             uint64_t rkey)
{
	return rma_post(r, p, false, dst, off, len, raddr, rkey);
}

int
rmq_pat_write(struct rmq_pat_rma *r, struct rmq_peer *p,
              struct rmq_pat_mem *src, size_t off, size_t len,
              uint64_t raddr, uint64_t rkey)
{
	return rma_post(r, p, true, src, off, len, raddr, rkey);
}

/* ---- a timer ---- */

static void
timer_run(struct rmq_timer *t, int64_t now, void *owner)
{
	struct rmq_pat_timer *pt = (struct rmq_pat_timer *) t;

	RMQ_UNUSED(owner);
	if (now >= t->when) {
		t->when = INT64_MAX;
		pt->fn(pt->arg, now);
	}
}

struct rmq_pat_timer *
rmq_pat_timer_new(struct rmq_socket *s, void (*fn)(void *arg, int64_t now),
                  void *arg)
{
	struct rmq_pat_timer *pt = calloc(1, sizeof(*pt));

	if (pt == NULL)
		return NULL;
	pt->s   = s;
	pt->fn  = fn;
	pt->arg = arg;
	rmq_timer_add(&s->reactor, &pt->t, timer_run);
	return pt;
}

void
rmq_pat_timer_at(struct rmq_pat_timer *pt, int64_t when_ns)
{
	rmq_timer_set(&pt->s->reactor, &pt->t, when_ns);
}

void
rmq_pat_timer_free(struct rmq_pat_timer *pt)
{
	if (pt == NULL)
		return;
	rmq_timer_remove(&pt->s->reactor, &pt->t);
	free(pt);
}

int64_t
rmq_pat_now(void)
{
	return rmq_now_ns();
}

/* ---- messages a pattern brought in ---- */

int
rmq_pat_deliver(struct rmq_socket *s, struct rmq_peer *p, void *heap,
                size_t len, bool more)
{
	return rmq_rndv_read_deliver(s, p, heap, len, more);
}

void
rmq_pat_cut(struct rmq_socket *s, struct rmq_peer *p)
{
	rmq_rx_abort(s, p);
}

bool
rmq_pat_sending_frames(const struct rmq_socket *s)
{
	return s->tx_open;
}

uint64_t
rmq_pat_peer_sent(const struct rmq_peer *p)
{
	return p->sent;
}

uint64_t
rmq_pat_peer_recvd(const struct rmq_peer *p)
{
	return p->recvd;
}

bool
rmq_pat_peer_live(const struct rmq_peer *p)
{
	return p->state == RMQ_PEER_LIVE;
}

size_t
rmq_pat_peer_queued(const struct rmq_peer *p)
{
	return p->q.msgs; /* whole messages: the open one must come in */
}

int
rmq_pat_rcvhwm(const struct rmq_socket *s)
{
	return s->rcvhwm;
}
