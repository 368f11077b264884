/*
 * The transfer paths.
 *
 *   inject     header + payload on the stack, fi_inject: no completion.
 *   eager      header + payload copied into a registered tx slot, fi_send;
 *              lands in the receiver's multi-recv slab, where it stays until
 *              the application takes it (copy-out, or in place as rmq_msg).
 *   rndv_read  the sender registers the payload FI_REMOTE_READ and sends an
 *              RTS {length, address, key, cookie}; the receiver fi_read's it
 *              straight into the buffer given to rmq_recv, in chunks of at
 *              most rma_chunk, then sends FIN {cookie, status}; the sender
 *              deregisters on FIN (or on the peer's death).
 *   rndv_send  the RTS says "send": the receiver posts a tagged receive for
 *              the whole payload into its buffer and answers CTS; the
 *              sender posts one fi_tsend (tag = conn << 32 | cookie), so
 *              the provider's own bulk protocol moves it; no FIN.
 *
 * Flow control: every data message and RTS costs one credit; the receiver
 * grants credits back as the application consumes messages, piggy-backed
 * on any header it sends, or in a CREDIT message at half the window.
 */
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "rmq_int.h"

/* ---- sending ---- */

static uint16_t
take_owed(struct rmq_peer *p)
{
	uint16_t g = p->owed > 0xffff ? 0xffff : (uint16_t) p->owed;

	p->owed -= g;
	return g;
}

void
rmq_hdr_fill(struct rmq_hdr *h, struct rmq_peer *p, int type, uint32_t msgid,
         uint32_t len)
{
	h->version = RMQ_WIRE_VERSION;
	h->type    = (uint8_t) type;
	h->credits = take_owed(p);
	h->conn    = p->rid;
	h->msgid   = msgid;
	h->len     = len;
}

/*
 * After a post returned *rc: true to post again (-FI_EAGAIN: the first
 * send to a new peer on tcp;ofi_rxm needs both sides to progress, so we
 * progress, or wait a little), false when *rc is final -- 0, the post's
 * error (logged), -RMQ_EAGAIN past the deadline, -RMQ_ECONNRESET when the
 * peer died meanwhile.
 */
bool
rmq_post_again(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
               ssize_t *rc, const char *what)
{
	if (*rc == -FI_EAGAIN) {
		s->stats.eagain++;
		if (rmq_progress(s) == 0 && rmq_wait_idle(s, w) != 0) {
			*rc = -RMQ_EAGAIN;
			return false;
		}
		if (p->state == RMQ_PEER_DEAD) {
			*rc = -RMQ_ECONNRESET;
			return false;
		}
		return true;
	}
	if (*rc != 0)
		rmq_log(RMQ_LOG_ERROR, "%s to %s: %s", what, p->name,
		        fi_strerror((int) -*rc));
	return false;
}

/* Post with fi_inject (tx NULL) or fi_send from a tx slot. */
static int
post_retry(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
           void *buf, size_t n, struct rmq_tx *tx)
{
	ssize_t rc;

	if (tx != NULL && (rc = rmq_strict_desc(s, s->tx_desc, "fi_send")) != 0)
		return (int) rc;
	do
		rc = tx != NULL ? fi_send(s->ep, buf, n, s->tx_desc, p->fiaddr,
		                          &tx->op.fctx)
		                : fi_inject(s->ep, buf, n, p->fiaddr);
	while (rmq_post_again(s, p, w, &rc, tx ? "fi_send" : "fi_inject"));
	return (int) rc;
}

/* inject with the header as 8 bytes of remote CQ data. */
static int
post_injectdata(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
                const void *buf, size_t n, uint64_t data)
{
	ssize_t rc;

	do
		rc = fi_injectdata(s->ep, buf, n, data, p->fiaddr);
	while (rmq_post_again(s, p, w, &rc, "fi_injectdata"));
	return (int) rc;
}

int
rmq_tx_get(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
       struct rmq_tx **txp)
{
	while (s->tx_free == NULL) {
		if (rmq_progress(s) == 0 && rmq_wait_idle(s, w) != 0)
			return -RMQ_EAGAIN;
		if (p->state == RMQ_PEER_DEAD)
			return -RMQ_ECONNRESET;
	}
	*txp       = s->tx_free;
	s->tx_free = (*txp)->next_free;
	return 0;
}

void
rmq_tx_put(struct rmq_socket *s, struct rmq_tx *tx)
{
	tx->next_free = s->tx_free;
	s->tx_free    = tx;
}

/* Send a small control-sized buffer by inject, else through a tx slot. */
static int
send_small(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
           const uint8_t *b, size_t n)
{
	struct rmq_tx *tx;
	int            rc;

	if (s->dom->caps.inject && n <= s->dom->caps.inject_size)
		return post_retry(s, p, w, (void *) b, n, NULL);
	rc = rmq_tx_get(s, p, w, &tx);
	if (rc != 0)
		return rc;
	memcpy(tx->buf, b, n);
	rc = post_retry(s, p, w, tx->buf, n, tx);
	if (rc != 0) {
		rmq_tx_put(s, tx);
		return rc;
	}
	tx->peer = p;
	p->pending++;
	s->inflight++;
	return 0;
}

int
rmq_xfer_ctl(struct rmq_socket *s, struct rmq_peer *p, int type,
             uint32_t msgid, uint32_t status)
{
	uint8_t           b[RMQ_HDR_SIZE];
	struct rmq_hdr    h;
	struct rmq_waiter w;
	int               rc;

	if (p->state == RMQ_PEER_DEAD)
		return -RMQ_ECONNRESET;
	rmq_hdr_fill(&h, p, type, msgid, status);
	rmq_hdr_encode(b, &h);
	rmq_waiter_init(&w, 1000);
	rmq_peer_hold(p);
	rc = send_small(s, p, &w, b, sizeof(b));
	if (rc != 0)
		p->owed += h.credits;
	else if (type == RMQ_MT_FIN || type == RMQ_MT_CTS)
		p->sent++; /* counted in BYE: close waits for it */
	rmq_peer_release(s, p); /* may free p if it died meanwhile */
	return rc;
}

static void
rndv_unlink(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	struct rmq_rndv_tx **pp;

	for (pp = &s->rndv; *pp != NULL; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
}

/* Ask the provider to drop what it still has posted for r. */
static void
rndv_cancel(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	size_t i;

	if (!r->by_write) {
		(void) fi_cancel(&s->ep->fid, &r->op.fctx);
		return;
	}
	for (i = 0; i < r->wnext && r->wops != NULL; i++)
		(void) fi_cancel(&s->ep->fid, &r->wops[i].op.fctx);
}

/* Give back what a rendezvous send held; the provider is done with it. */
static void
rndv_release(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	if (r->mr != NULL)
		fi_close(&r->mr->fid); /* revokes the peer's access */
	r->mr = NULL;
	free(r->owned);
	r->owned = NULL;
	free(r->wops);
	r->wops = NULL;
	if (r->msg != NULL)
		rmq_msg_free(r->msg);
	r->msg = NULL;
	r->peer->pending--;
	s->inflight--;
}

void
rmq_rndv_complete(struct rmq_socket *s, struct rmq_rndv_tx *r, int status)
{
	if (r->done)
		return;
	r->done   = true;
	r->status = status;
	if (r->cts && !r->posted)
		s->cts_pending--;
	r->cts = false;
	if (r->tsend_out) {
		/*
		 * The provider still reads the payload: the buffer, its
		 * registration and the peer stay until the tsend completes
		 * (rmq_rndv_tsend_done), or the socket closes.
		 */
		rndv_cancel(s, r);
		return;
	}
	rndv_release(s, r);
	if (r->waited)
		return; /* the blocked sender unlinks it */
	rndv_unlink(s, r);
	rmq_peer_reap(s, r->peer);
	free(r);
}

void
rmq_rndv_tsend_done(struct rmq_socket *s, struct rmq_rndv_tx *r, int err)
{
	struct rmq_peer *p = r->peer;

	r->tsend_out = false;
	if (!r->done) {
		rmq_rndv_complete(s, r, err);
		return;
	}
	/* It failed while the provider held the payload: let go now. */
	rndv_release(s, r);
	if (!r->waited) {
		rndv_unlink(s, r);
		free(r);
		rmq_peer_reap(s, p);
	}
}

/*
 * rndv_write: post the chunks (at most rma_chunk bytes each) into the
 * granted buffer; the last one is an fi_writedata whose immediate tells
 * the receiver it is all there.  Where writes are not ordered, the last
 * waits until the others completed.  -FI_EAGAIN: the rest on the next
 * progress pass, so the sender keeps progressing meanwhile.
 */
static void
post_writes(struct rmq_socket *s, struct rmq_rndv_tx *r)
{
	size_t   chunk = s->dom->caps.rma_chunk, off, n, i;
	bool     last;
	ssize_t  rc = 0;

	if (r->wops == NULL) {
		r->nw   = r->len == 0 ? 1 : r->len / chunk + (r->len % chunk != 0);
		r->wops = calloc(r->nw, sizeof(*r->wops));
		if (r->wops == NULL) {
			rc = -RMQ_ENOMEM;
			goto fail;
		}
		for (i = 0; i < r->nw; i++) {
			r->wops[i].op.kind = RMQ_OP_WRITE;
			r->wops[i].r       = r;
		}
	}
	rc = rmq_strict_desc(s, r->desc, "fi_write");
	if (rc != 0)
		goto fail;
	while (r->wnext < r->nw) {
		i    = r->wnext;
		off  = i * chunk;
		n    = r->len - off < chunk ? r->len - off : chunk;
		last = i == r->nw - 1;
		if (last && !s->dom->caps.ordered && r->wpending > 0)
			return; /* after the others land */
		if (last)
			rc = fi_writedata(s->ep, (const uint8_t *) r->src + off,
			                  n, r->desc,
			                  RMQ_IMM_WRITE_MAKE(r->grant_id),
			                  r->peer->fiaddr, r->raddr + off, r->rkey,
			                  &r->wops[i].op.fctx);
		else
			rc = fi_write(s->ep, (const uint8_t *) r->src + off, n,
			              r->desc, r->peer->fiaddr, r->raddr + off,
			              r->rkey, &r->wops[i].op.fctx);
		if (rc == -FI_EAGAIN) {
			s->stats.eagain++;
			return;
		}
		if (rc != 0) {
			rmq_log(RMQ_LOG_ERROR, "fi_write to %s: %s",
			        r->peer->name, fi_strerror((int) -rc));
			goto fail;
		}
		r->wnext++;
		r->wpending++;
		r->tsend_out = true;
	}
	r->posted = true;
	s->cts_pending--;
	return;
fail:
	r->posted = true;
	s->cts_pending--;
	if (r->wstatus == 0)
		r->wstatus = (int) rc;
	/* Tell the receiver, which waits for our last write. */
	(void) rmq_xfer_ctl(s, r->peer, RMQ_MT_ABORT, r->grant_id,
	                    (uint32_t) RMQ_EPROTO);
	if (r->wpending == 0) {
		r->tsend_out = false;
		rmq_rndv_complete(s, r, r->wstatus);
	}
}

void
rmq_xfer_write_done(struct rmq_socket *s, struct rmq_write_op *wo, int err)
{
	struct rmq_rndv_tx *r = wo->r;

	r->wpending--;
	if (err != 0 && r->wstatus == 0)
		r->wstatus = err;
	if (r->wpending > 0)
		return;
	if (r->wstatus != 0 && !r->posted) {
		/* Stop posting the rest. */
		r->posted = true;
		s->cts_pending--;
		if (r->peer->state == RMQ_PEER_LIVE)
			(void) rmq_xfer_ctl(s, r->peer, RMQ_MT_ABORT,
			                    r->grant_id, (uint32_t) EIO);
	}
	if (r->posted)
		rmq_rndv_tsend_done(s, r, r->wstatus);
}

void
rmq_xfer_post_tsends(struct rmq_socket *s)
{
	struct rmq_rndv_tx *r, *next;
	ssize_t             rc;
	uint64_t            tag;

	for (r = s->rndv; r != NULL && s->cts_pending > 0; r = next) {
		next = r->next;
		if (!r->cts || r->posted || r->done)
			continue;
		if (r->by_write) {
			post_writes(s, r);
			continue;
		}
		tag = ((uint64_t) r->peer->rid << 32) | r->cookie;
		rc  = rmq_strict_desc(s, r->desc, "fi_tsend");
		if (rc == 0)
			rc = fi_tsend(s->ep, r->src, r->len, r->desc, r->peer->fiaddr,
		               tag, &r->op.fctx);
		if (rc == -FI_EAGAIN) {
			s->stats.eagain++;
			continue;
		}
		s->cts_pending--;
		r->posted = true;
		if (rc == 0) {
			r->tsend_out = true;
		} else {
			rmq_log(RMQ_LOG_ERROR, "fi_tsend to %s: %s",
			        r->peer->name, fi_strerror((int) -rc));
			rmq_rndv_complete(s, r, (int) rc);
		}
	}
}

/*
 * A tsend whose peer died or cancelled: cancel it after 1 s, give up after
 * 2 s.  Returns true when it is time to give up.
 */
static bool
tsend_stuck(struct rmq_socket *s, struct rmq_rndv_tx *r, int64_t *since)
{
	int64_t now = rmq_now_ns();

	if (*since == 0) {
		*since = now;
		return false;
	}
	if (now - *since > 2000000000ll)
		return true;
	if (now - *since > 1000000000ll)
		rndv_cancel(s, r);
	return false;
}

static int
send_rndv(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
          const struct rmq_out *o, uint32_t msgid, int flags, int path)
{
	uint8_t              b[RMQ_RTS_SIZE];
	struct rmq_hdr       h;
	struct rmq_rts       rts;
	struct rmq_rndv_tx  *r;
	const uint8_t       *src;
	uint64_t             key;
	int64_t              stuck = 0;
	int                  rc;

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -RMQ_ENOMEM;
	r->op.kind = RMQ_OP_TSEND;
	r->peer    = p;
	r->cookie  = ++s->next_cookie;
	r->by_send  = path == RMQ_PATH_RNDV_SEND;
	r->by_write = path == RMQ_PATH_RNDV_WRITE;
	if (o->msg != NULL) {
		src = rmq_msg_data(o->msg);
	} else if (flags & RMQ_DONTWAIT) {
		/* Must return now: the payload moves to a buffer of ours. */
		r->owned = malloc(o->len);
		if (r->owned == NULL) {
			free(r);
			return -RMQ_ENOMEM;
		}
		memcpy(r->owned, o->buf, o->len);
		src = r->owned;
	} else {
		src      = o->buf;
		r->waited = true;
	}
	r->src = src;
	r->len = o->len;
	memset(&rts, 0, sizeof(rts));
	if (r->by_send) {
		/* Two-sided: only FI_MR_LOCAL providers need a descriptor. */
		rc = s->dom->caps.mr_local
		         ? rmq_mr_reg(s, (void *) src, o->len, FI_SEND, &r->mr,
		                      &r->desc, NULL)
		         : 0;
		rts.flags = RMQ_RTS_F_SEND;
	} else if (r->by_write) {
		/* We write from it: a descriptor where FI_MR_LOCAL says. */
		rc = s->dom->caps.mr_local
		         ? rmq_mr_reg(s, (void *) src, o->len, FI_WRITE, &r->mr,
		                      &r->desc, NULL)
		         : 0;
		rts.flags = RMQ_RTS_F_WRITE;
	} else {
		rc = rmq_mr_reg(s, (void *) src, o->len, FI_REMOTE_READ,
		                &r->mr, NULL, &key);
		rts.raddr = s->dom->caps.mr_virt_addr
		                ? (uint64_t) (uintptr_t) src
		                : 0;
		rts.rkey  = key;
	}
	if (rc != 0)
		goto fail;
	rts.len    = o->len;
	rts.cookie = r->cookie;
	rmq_hdr_fill(&h, p, RMQ_MT_RTS, msgid, 0);
	rmq_hdr_encode(b, &h);
	rmq_rts_encode(b + RMQ_HDR_SIZE, &rts);
	rc = send_small(s, p, w, b, sizeof(b));
	if (rc != 0) {
		p->owed += h.credits;
		if (r->mr != NULL)
			fi_close(&r->mr->fid);
		goto fail;
	}
	r->next = s->rndv;
	s->rndv = r;
	p->pending++;
	s->inflight++;
	/* The RTS is out: it cost a credit, whatever its FIN will say. */
	p->credits--;
	p->sent++;
	s->stats.sent_msgs[path]++;
	s->stats.sent_bytes[path] += o->len;
	if (o->msg != NULL)
		r->msg = o->msg; /* ours now: freed on FIN */
	if (!r->waited)
		return 0;

	/*
	 * Blocking send: the caller's buffer is in use until FIN (read) or
	 * the tsend's completion.  SNDTIMEO bounded the wait for credits
	 * and a peer; once the RTS is out we do not revoke on a timer: the
	 * peer may be reading (on tcp;ofi_rxm a read of a revoked region
	 * reports success and kills the connection) or have posted its
	 * receive.  It ends with the transfer or the peer's death.
	 */
	rmq_waiter_init(w, -1);
	for (;;) {
		if (r->done && !r->tsend_out)
			break;
		if (rmq_progress(s) > 0)
			continue;
		/* A peer waiting for our FIN may itself wait for its RTS. */
		rmq_xfer_pull_pending(s);
		if (r->tsend_out && (r->done || p->state == RMQ_PEER_DEAD) &&
		    tsend_stuck(s, r, &stuck)) {
			/*
			 * shm and tcp;ofi_rxm never complete a send to a peer
			 * that is gone or stopped listening: stop waiting.  The
			 * entry stays with the socket until the provider lets
			 * go (or the socket closes).
			 */
			if (!r->done)
				rmq_rndv_complete(s, r, -RMQ_ECONNRESET);
			r->waited = false;
			return r->status;
		}
		(void) rmq_wait_idle(s, w);
	}
	rc = r->status;
	rndv_unlink(s, r);
	rmq_peer_reap(s, p);
	free(r);
	return rc;
fail:
	free(r->owned);
	free(r);
	return rc;
}

/* Does a ring message of len bytes fit p's ring and our tx slots? */
static bool
slots_fit(const struct rmq_peer *p, const struct rmq_socket *s, size_t len)
{
	size_t k = (RMQ_HDR_SIZE + len + p->rring_slot - 1) / p->rring_slot;

	return k <= p->rring_slots / 4 && RMQ_HDR_SIZE + len <= s->tx_slot;
}

/*
 * The path for len bytes to p: the table's choice, moved on to the next
 * one when this peer cannot take it (its slabs, its ring).  A forced path
 * that cannot carry the message is an error that says why.
 */
static int
choose_path(struct rmq_socket *s, struct rmq_peer *p, size_t len)
{
	const struct rmq_path_table *t = &s->paths;
	int                          path = rmq_path_select(t, len);
	size_t                       cap;

	switch (path) {
	case RMQ_PATH_INJECT:
		cap = s->dom->caps.inject_size >= RMQ_HDR_SIZE
		          ? s->dom->caps.inject_size - RMQ_HDR_SIZE
		          : 0;
		if (cap > RMQ_INJECT_BUF - RMQ_HDR_SIZE)
			cap = RMQ_INJECT_BUF - RMQ_HDR_SIZE;
		if (s->dom->caps.inject_data)
			cap = s->dom->caps.inject_data_max; /* header as data */
		if ((len > cap || len > p->eager_max) && t->force < 0) {
			/* By size: the peer takes less; next path. */
			path = len <= p->eager_max ? RMQ_PATH_EAGER
			                           : t->rndv_path;
			return path;
		}
		if (len > cap || len > p->eager_max) {
			rmq_log(RMQ_LOG_ERROR,
			        "path inject carries at most %zu bytes here, "
			        "not %zu",
			        cap < p->eager_max ? cap : p->eager_max, len);
			return -RMQ_EMSGSIZE;
		}
		return path;
	case RMQ_PATH_EAGER:
		if (len <= p->eager_max && RMQ_HDR_SIZE + len <= s->tx_slot)
			return path;
		if (t->force >= 0) {
			rmq_log(RMQ_LOG_ERROR,
			        "path eager carries at most %zu bytes to %s "
			        "(thresholds.eager_max), not %zu",
			        p->eager_max, p->name, len);
			return -RMQ_EMSGSIZE;
		}
		if (t->ring && len <= t->ring_max && p->rring_slots > 0 &&
		    slots_fit(p, s, len))
			return RMQ_PATH_RING;
		return t->rndv_path;
	case RMQ_PATH_RING:
		if (p->rring_slots > 0 && slots_fit(p, s, len))
			return path;
		if (t->force >= 0) {
			rmq_log(RMQ_LOG_ERROR,
			        "path ring cannot carry %zu bytes to %s: %s",
			        len, p->name,
			        p->rring_slots == 0
			            ? "it has no ring"
			            : "a message takes at most a quarter of "
			              "its ring (ring.slots, ring.slot_size)");
			return p->rring_slots == 0 ? -RMQ_ENOTSUP
			                           : -RMQ_EMSGSIZE;
		}
		/* This peer has no ring (or not room): eager if it fits. */
		if (len <= p->eager_max && RMQ_HDR_SIZE + len <= s->tx_slot)
			return RMQ_PATH_EAGER;
		return t->rndv_path;
	default:
		return path;
	}
}

/* seg: the message in eager-sized pieces, each a two-sided send. */
static int
send_seg(struct rmq_socket *s, struct rmq_peer *p, struct rmq_waiter *w,
         const uint8_t *src, size_t len, uint32_t msgid)
{
	size_t         piece = p->eager_max, off = 0, n;
	struct rmq_hdr h;
	struct rmq_tx *tx;
	bool           first = true;
	int            rc;

	/* Its slabs take eager_max + 16 bytes; our slots tx_slot. */
	if (piece + RMQ_HDR_SIZE > s->tx_slot)
		piece = s->tx_slot - RMQ_HDR_SIZE;
	piece = piece > RMQ_SEG_EXT_SIZE ? piece - RMQ_SEG_EXT_SIZE : 1;
	do {
		n  = len - off < piece ? len - off : piece;
		rc = rmq_tx_get(s, p, w, &tx);
		if (rc == -RMQ_EAGAIN && !first) {
			/* Started: the rest must follow, whatever the timeout. */
			rmq_waiter_init(w, -1);
			continue;
		}
		if (rc != 0)
			return rc;
		rmq_hdr_fill(&h, p, RMQ_MT_SEG, msgid, (uint32_t) n);
		rmq_hdr_encode(tx->buf, &h);
		rmq_seg_encode(tx->buf + RMQ_HDR_SIZE, (uint64_t) len);
		if (n > 0)
			memcpy(tx->buf + RMQ_SEG_HDR_SIZE, src + off, n);
		for (;;) {
			rc = post_retry(s, p, w, tx->buf, RMQ_SEG_HDR_SIZE + n, tx);
			if (rc != -RMQ_EAGAIN || first)
				break;
			rmq_waiter_init(w, -1);
		}
		if (rc != 0) {
			p->owed += h.credits;
			rmq_tx_put(s, tx);
			if (!first)
				rmq_peer_fail(s, p, rc, "segmented send failed");
			return rc;
		}
		tx->peer = p;
		p->pending++;
		s->inflight++;
		if (!first)
			p->sent++; /* the first is counted by the caller */
		first = false;
		off += n;
	} while (off < len);
	return 0;
}

static int
xfer_send(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_out *o,
          uint32_t msgid, int flags)
{
	const void       *src = o->msg ? rmq_msg_data(o->msg) : o->buf;
	size_t            len = o->msg ? rmq_msg_size(o->msg) : o->len;
	struct rmq_out    out = {.buf = src, .len = len, .msg = o->msg};
	struct rmq_waiter w;
	struct rmq_hdr    h;
	struct rmq_tx    *tx;
	uint8_t           ib[RMQ_INJECT_BUF];
	int               path, rc;

	if ((uint64_t) len > p->maxmsg) {
		rmq_log(RMQ_LOG_ERROR,
		        "%zu-byte message is larger than %s accepts (%llu)",
		        len, p->name, (unsigned long long) p->maxmsg);
		return -RMQ_EMSGSIZE;
	}
	path = choose_path(s, p, len);
	if (path < 0)
		return path;
	rmq_waiter_init(&w, (flags & RMQ_DONTWAIT) ? 0 : s->sndtimeo);
	/* Credits from the peer, and our own bound on sends in flight. */
	while (p->credits <= 0 || s->inflight >= s->sndhwm) {
		if (p->state == RMQ_PEER_DEAD)
			return -RMQ_ECONNRESET;
		if (rmq_progress(s) > 0)
			continue;
		rmq_xfer_pull_pending(s);
		if (rmq_wait_idle(s, &w) != 0)
			return -RMQ_EAGAIN;
	}
	if (!rmq_peer_usable(p))
		return -RMQ_ECONNRESET;

	switch (path) {
	case RMQ_PATH_INJECT:
		if (RMQ_HDR_SIZE + len > s->dom->caps.inject_size ||
		    RMQ_HDR_SIZE + len > RMQ_INJECT_BUF) {
			/* Too big beside the header: the header rides as CQ
			 * data (caps.c), no credits piggy-backed. */
			rc = post_injectdata(s, p, &w, src, len,
			                     ((uint64_t) p->rid << 32) | msgid);
			break;
		}
		rmq_hdr_fill(&h, p, RMQ_MT_DATA | RMQ_MT_F_INJECT, msgid,
		             (uint32_t) len);
		rmq_hdr_encode(ib, &h);
		if (len > 0)
			memcpy(ib + RMQ_HDR_SIZE, src, len);
		rc = post_retry(s, p, &w, ib, RMQ_HDR_SIZE + len, NULL);
		if (rc != 0)
			p->owed += h.credits;
		break;
	case RMQ_PATH_EAGER:
		rc = rmq_tx_get(s, p, &w, &tx);
		if (rc != 0)
			break;
		rmq_hdr_fill(&h, p, RMQ_MT_DATA, msgid, (uint32_t) len);
		rmq_hdr_encode(tx->buf, &h);
		memcpy(tx->buf + RMQ_HDR_SIZE, src, len);
		rc = post_retry(s, p, &w, tx->buf, RMQ_HDR_SIZE + len, tx);
		if (rc != 0) {
			p->owed += h.credits;
			rmq_tx_put(s, tx);
			break;
		}
		tx->peer = p;
		p->pending++;
		s->inflight++;
		break;
	case RMQ_PATH_RING:
		rc = rmq_ring_send(s, p, &w, src, len, msgid);
		break;
	case RMQ_PATH_SEG:
		rc = send_seg(s, p, &w, src, len, msgid);
		break;
	default:
		/* Counts its credit and stats when the RTS goes out. */
		return send_rndv(s, p, &w, &out, msgid, flags, path);
	}
	if (rc != 0)
		return rc;
	p->credits--;
	p->sent++;
	s->stats.sent_msgs[path]++;
	s->stats.sent_bytes[path] += len;
	/* inject and eager copied the message out */
	if (o->msg != NULL)
		rmq_msg_free(o->msg);
	return 0;
}

int
rmq_xfer_send(struct rmq_socket *s, struct rmq_peer *p,
              const struct rmq_out *o, uint32_t msgid, int flags)
{
	int rc;

	rmq_peer_hold(p);
	rc = xfer_send(s, p, o, msgid, flags);
	rmq_peer_release(s, p);
	return rc;
}

/* ---- receiving ---- */

void
rmq_rxq_push(struct rmq_socket *s, struct rmq_peer *p, struct rmq_rxent *e)
{
	s->nqueued++;
	e->next = NULL;
	if (p->qtail != NULL)
		p->qtail->next = e;
	else
		p->qhead = e;
	p->qtail = e;
	p->qlen++;
}

struct rmq_rxent *
rmq_rxq_pop(struct rmq_socket *s, struct rmq_peer *p)
{
	struct rmq_rxent *e = p->qhead;

	if (e == NULL)
		return NULL;
	s->nqueued--;
	p->qhead = e->next;
	if (p->qhead == NULL)
		p->qtail = NULL;
	p->qlen--;
	e->next = NULL;
	return e;
}

#define RMQ_RXENT_CACHE 64

struct rmq_rxent *
rmq_rxent_new(struct rmq_socket *s)
{
	struct rmq_rxent *e = s->rx_free;

	if (e == NULL)
		return calloc(1, sizeof(*e));
	s->rx_free = e->next;
	s->nrx_free--;
	memset(e, 0, sizeof(*e));
	return e;
}

void
rmq_rxent_free(struct rmq_socket *s, struct rmq_rxent *e)
{
	if (e->slab != NULL)
		rmq_slab_unref(e->slab);
	if (e->ring_end != 0 && e->peer != NULL)
		rmq_ring_release(s, e->peer, e->ring_end);
	free(e->heap);
	if (s->nrx_free < RMQ_RXENT_CACHE) {
		e->next    = s->rx_free;
		s->rx_free = e;
		s->nrx_free++;
		return;
	}
	free(e);
}

void
rmq_rxent_cache_drop(struct rmq_socket *s)
{
	struct rmq_rxent *e;

	while ((e = s->rx_free) != NULL) {
		s->rx_free = e->next;
		free(e);
	}
	s->nrx_free = 0;
}

/* A message we drop still frees its credit. */
void
rmq_consumed(struct rmq_socket *s, struct rmq_peer *p)
{
	p->owed++;
	if (p->state == RMQ_PEER_LIVE && p->owed >= (uint32_t) (s->rcvhwm + 1) / 2)
		(void) rmq_xfer_ctl(s, p, RMQ_MT_CREDIT, 0, 0);
}

/* rndv_write: the receiver granted its buffer; post the writes. */
static void
grant_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_hdr *h,
         const uint8_t *ext)
{
	struct rmq_rndv_tx *r;
	struct rmq_rts      g;

	for (r = s->rndv; r != NULL; r = r->next)
		if (r->cookie == h->msgid && r->peer == p && r->by_write &&
		    !r->done && !r->cts)
			break;
	if (r == NULL) {
		rmq_log(RMQ_LOG_DEBUG, "GRANT for unknown cookie %u", h->msgid);
		return;
	}
	if (rmq_rts_decode(&g, ext) != 0 || g.len != r->len || g.flags != 0) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "bad GRANT from %s", p->name);
		/* It waits for our writes: tell it there will be none. */
		(void) rmq_xfer_ctl(s, p, RMQ_MT_ABORT, g.cookie, EPROTO);
		rmq_rndv_complete(s, r, -RMQ_EPROTO);
		return;
	}
	r->raddr    = g.raddr;
	r->rkey     = g.rkey;
	r->grant_id = g.cookie;
	r->cts      = true;
	s->cts_pending++; /* posted after this CQ pass */
}

/* rndv_write: the sender could not write into our grant. */
static void
abort_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_hdr *h)
{
	struct rmq_grant *g;

	for (g = s->grants; g != NULL; g = g->next)
		if (g->id == h->msgid && g->peer == p && !g->done) {
			g->done   = true;
			g->status = h->len > 0 && h->len < 4096 ? -(int) h->len
			                                       : -RMQ_EPROTO;
			return;
		}
}

static void
seg_bad(struct rmq_socket *s, struct rmq_peer *p, const char *why)
{
	s->stats.proto_errors++;
	rmq_log(RMQ_LOG_WARN, "bad segment from %s: %s", p->name, why);
	rmq_peer_fail(s, p, -RMQ_EPROTO, why);
}

/* seg: one piece; the message is queued when its last piece is in. */
static void
seg_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_hdr *h,
       const uint8_t *ext)
{
	uint64_t          total = rmq_seg_decode(ext);
	const uint8_t    *data  = ext + RMQ_SEG_EXT_SIZE;
	struct rmq_rxent *e;

	if (p->seg_skip > 0) {
		/* The rest of a message we dropped. */
		if (h->len > p->seg_skip) {
			seg_bad(s, p, "longer than its message");
			return;
		}
		p->seg_skip -= h->len;
		return;
	}
	if (p->seg == NULL) {
		if (h->len > total) {
			seg_bad(s, p, "piece longer than its message");
			return;
		}
		if ((s->maxmsg >= 0 && total > (uint64_t) s->maxmsg) ||
		    total > SIZE_MAX / 2) {
			rmq_log(RMQ_LOG_WARN,
			        "dropped a %llu-byte message from %s: larger "
			        "than RMQ_MAXMSGSIZE %lld",
			        (unsigned long long) total, p->name,
			        (long long) s->maxmsg);
			s->stats.dropped++;
			p->seg_skip = total - h->len;
			rmq_consumed(s, p);
			return;
		}
		e = rmq_rxent_new(s);
		if (e != NULL && (e->heap = malloc(total ? total : 1)) == NULL) {
			rmq_rxent_free(s, e);
			e = NULL;
		}
		if (e == NULL) {
			s->stats.dropped++;
			p->seg_skip = total - h->len;
			rmq_consumed(s, p);
			return;
		}
		e->peer     = p;
		e->msgid    = h->msgid;
		e->path     = RMQ_PATH_SEG;
		e->len      = total;
		p->seg      = e;
		p->seg_have = 0;
	}
	e = p->seg;
	if (total != e->len || h->len > e->len - p->seg_have) {
		seg_bad(s, p, "pieces do not add up");
		return;
	}
	if (h->len > 0)
		memcpy((uint8_t *) e->heap + p->seg_have, data, h->len);
	p->seg_have += h->len;
	if (p->seg_have == e->len) {
		p->seg = NULL;
		rmq_rxq_push(s, p, e);
	}
}

void
rmq_xfer_rx(struct rmq_socket *s, struct rmq_slab *sl, uint8_t *buf,
            size_t len, const uint64_t *data)
{
	struct rmq_hdr      h;
	struct rmq_peer    *p;
	struct rmq_rxent   *e;
	struct rmq_rndv_tx *r;
	uint8_t            *payload = buf + RMQ_HDR_SIZE;
	int                 rc = 0, t;

	if (data != NULL) {
		/* Header in the CQ data (inject beyond inline): rebuild it. */
		memset(&h, 0, sizeof(h));
		h.version = RMQ_WIRE_VERSION;
		h.type    = RMQ_MT_DATA | RMQ_MT_F_INJECT;
		h.conn    = (uint32_t) (*data >> 32);
		h.msgid   = (uint32_t) *data;
		h.len     = (uint32_t) len;
		payload   = buf;
		if (len > s->dom->caps.inject_size || len > UINT32_MAX)
			rc = -RMQ_EPROTO; /* no inject is that big */
	} else {
		rc = rmq_hdr_decode(&h, buf, len);
	}
	if (rc != 0) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "dropped a malformed %zu-byte message: %s",
		        len, rmq_strerror(rc));
		return;
	}
	p = rmq_peer_lookup(s, h.conn);
	if (p == NULL || p->state == RMQ_PEER_DEAD) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_DEBUG, "message from unknown peer %#x dropped",
		        h.conn);
		return;
	}
	p->credits += h.credits;
	t = h.type & RMQ_MT_MASK;
	switch (t) {
	case RMQ_MT_DATA:
	case RMQ_MT_RTS:
		p->recvd++;
		e = rmq_rxent_new(s);
		if (e == NULL) {
			s->stats.dropped++;
			rmq_consumed(s, p);
			return;
		}
		e->peer  = p;
		e->msgid = h.msgid;
		if (t == RMQ_MT_DATA || data != NULL) {
			e->path = (h.type & RMQ_MT_F_INJECT) ? RMQ_PATH_INJECT
			                                     : RMQ_PATH_EAGER;
			e->len  = h.len;
			e->data = payload;
			e->slab = sl;
			atomic_fetch_add(&sl->refs, 1);
		} else {
			if (rmq_rts_decode(&e->rts, buf + RMQ_HDR_SIZE) != 0) {
				s->stats.proto_errors++;
				rmq_log(RMQ_LOG_WARN, "bad RTS from %s dropped",
				        p->name);
				rmq_rxent_free(s, e);
				rmq_consumed(s, p);
				return;
			}
			e->path = (e->rts.flags & RMQ_RTS_F_SEND)
			              ? RMQ_PATH_RNDV_SEND
			          : (e->rts.flags & RMQ_RTS_F_WRITE)
			              ? RMQ_PATH_RNDV_WRITE
			              : RMQ_PATH_RNDV_READ;
			e->len  = e->rts.len;
		}
		if (s->maxmsg >= 0 && e->len > (uint64_t) s->maxmsg) {
			rmq_log(RMQ_LOG_WARN,
			        "dropped a %zu-byte message from %s: larger "
			        "than RMQ_MAXMSGSIZE %lld",
			        e->len, p->name, (long long) s->maxmsg);
			s->stats.dropped++;
			if (t == RMQ_MT_RTS)
				(void) rmq_xfer_ctl(s, p, RMQ_MT_FIN,
				                    e->rts.cookie, EMSGSIZE);
			rmq_rxent_free(s, e);
			rmq_consumed(s, p);
			return;
		}
		rmq_rxq_push(s, p, e);
		break;
	case RMQ_MT_FIN:
		p->recvd++;
		for (r = s->rndv; r != NULL; r = r->next)
			if (r->cookie == h.msgid && r->peer == p && !r->done)
				break;
		if (r == NULL) {
			/* Late FIN after a timeout revoked it: harmless. */
			rmq_log(RMQ_LOG_DEBUG, "FIN for unknown cookie %u",
			        h.msgid);
			return;
		}
		rmq_rndv_complete(s, r,
		                  h.len == 0 ? 0
		                  : h.len < 4096 ? -(int) h.len
		                                 : -RMQ_EPROTO);
		break;
	case RMQ_MT_CTS:
		p->recvd++;
		for (r = s->rndv; r != NULL; r = r->next)
			if (r->cookie == h.msgid && r->peer == p && r->by_send &&
			    !r->done && !r->cts)
				break;
		if (r == NULL) {
			rmq_log(RMQ_LOG_DEBUG, "CTS for unknown cookie %u",
			        h.msgid);
			return;
		}
		r->cts = true;
		s->cts_pending++; /* posted after this CQ pass */
		break;
	case RMQ_MT_GRANT:
		p->recvd++;
		grant_rx(s, p, &h, buf + RMQ_HDR_SIZE);
		break;
	case RMQ_MT_SEG:
		p->recvd++;
		seg_rx(s, p, &h, buf + RMQ_HDR_SIZE);
		break;
	case RMQ_MT_RCREDIT:
		if (h.len > p->rring_slots ||
		    p->rring_free + h.len > (int64_t) p->rring_slots) {
			s->stats.proto_errors++;
			rmq_peer_fail(s, p, -RMQ_EPROTO, "ring credit overflow");
			return;
		}
		p->rring_free += h.len;
		break;
	case RMQ_MT_ABORT:
		abort_rx(s, p, &h);
		break;
	default: /* CREDIT: the credits were all it carried */
		break;
	}
}

/*
 * Wait until every posted op of rd completed; they target the caller's
 * buffer, so we may not return earlier.  A dead peer's ops are cancelled
 * after a grace period.
 */
static void
ops_wait(struct rmq_socket *s, struct rmq_peer *p, struct rmq_read *rd,
         struct rmq_read_op *ops, size_t nops)
{
	struct rmq_waiter w;
	int64_t           dead_since = 0;
	size_t            i;

	rmq_waiter_init(&w, -1);
	s->cur_read = rd;
	while (rd->pending > 0) {
		if (rmq_progress(s) > 0)
			continue;
		if (p->state == RMQ_PEER_DEAD) {
			if (dead_since == 0) {
				dead_since = rmq_now_ns();
			} else if (rmq_now_ns() - dead_since > 2000000000ll) {
				for (i = 0; i < nops; i++)
					fi_cancel(&s->ep->fid,
					          &ops[i].op.fctx);
				dead_since = rmq_now_ns();
			}
		}
		(void) rmq_wait_idle(s, &w);
	}
	s->cur_read = NULL;
}

/*
 * rndv_read: read n bytes of a rendezvous message into dst, in chunks of
 * at most rma_chunk, progressing meanwhile.
 */
static int
rndv_read(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rts *rts,
          void *dst, size_t n)
{
	struct rmq_read     rd = {0};
	struct rmq_read_op *ops;
	struct rmq_waiter   w;
	void               *desc  = NULL;
	size_t              chunk = s->dom->caps.rma_chunk, off, i;
	ssize_t             rc = 0;

	if (n == 0)
		return 0;
	rd.nchunks = n / chunk + (n % chunk != 0); /* chunk may be SIZE_MAX */
	ops        = calloc(rd.nchunks, sizeof(*ops));
	if (ops == NULL)
		return -RMQ_ENOMEM;
	if (s->dom->caps.mr_local) {
		rc = rmq_mr_reg(s, dst, n, FI_READ, &rd.mr, &desc, NULL);
		if (rc != 0)
			goto out;
	}
	rmq_waiter_init(&w, -1);
	rc = rmq_strict_desc(s, desc, "fi_read");
	if (rc != 0)
		goto out;
	s->cur_read = &rd;
	for (i = 0, off = 0; i < rd.nchunks && !rd.orphaned;
	     i++, off += chunk) {
		size_t len = n - off < chunk ? n - off : chunk;

		ops[i].op.kind = RMQ_OP_READ;
		ops[i].rd      = &rd;
		for (;;) {
			rc = fi_read(s->ep, (uint8_t *) dst + off, len, desc,
			             p->fiaddr, rts->raddr + off, rts->rkey,
			             &ops[i].op.fctx);
			if (rc != -FI_EAGAIN)
				break;
			s->stats.eagain++;
			if (rmq_progress(s) == 0)
				(void) rmq_wait_idle(s, &w);
			if (p->state == RMQ_PEER_DEAD)
				break;
		}
		if (rc != 0)
			break;
		if (!rd.orphaned)
			rd.pending++;
	}
	if (rc != 0) {
		rmq_log(RMQ_LOG_ERROR, "fi_read from %s: %s", p->name,
		        fi_strerror((int) -rc));
		rd.status = rc == -FI_EAGAIN ? -RMQ_ECONNRESET : (int) rc;
	}
	ops_wait(s, p, &rd, ops, rd.nchunks);
	rc = rd.status;
	if (rc == 0 && p->state == RMQ_PEER_DEAD)
		rc = -RMQ_ECONNRESET;
out:
	if (rd.mr != NULL)
		fi_close(&rd.mr->fid);
	free(ops);
	return (int) rc;
}

/*
 * rndv_send, receiver side: post a tagged receive for exactly len bytes
 * into dst, tell the sender CTS, wait for the payload.  *cts_sent says
 * whether the sender was told (else it still waits for a FIN).
 */
static int
rndv_trecv(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rts *rts,
           void *dst, bool *cts_sent)
{
	struct rmq_read    rd = {0};
	struct rmq_read_op op = {0};
	struct rmq_waiter  w;
	void              *desc = NULL;
	uint64_t           tag  = ((uint64_t) p->id << 32) | rts->cookie;
	ssize_t            rc   = 0;

	*cts_sent = false;
	if (s->dom->caps.mr_local) {
		rc = rmq_mr_reg(s, dst, rts->len, FI_RECV, &rd.mr, &desc, NULL);
		if (rc != 0)
			return (int) rc;
	}
	op.op.kind = RMQ_OP_READ; /* completes like a read chunk */
	op.rd      = &rd;
	rmq_waiter_init(&w, -1);
	rc = rmq_strict_desc(s, desc, "fi_trecv");
	for (; rc == 0;) {
		rc = fi_trecv(s->ep, dst, rts->len, desc, FI_ADDR_UNSPEC, tag, 0,
		              &op.op.fctx);
		if (rc != -FI_EAGAIN || p->state == RMQ_PEER_DEAD)
			break;
		s->stats.eagain++;
		if (rmq_progress(s) == 0)
			(void) rmq_wait_idle(s, &w);
	}
	if (rc != 0) {
		rmq_log(RMQ_LOG_ERROR, "fi_trecv for %s: %s", p->name,
		        fi_strerror((int) -rc));
		goto out;
	}
	rd.pending = 1;
	rc = rmq_xfer_ctl(s, p, RMQ_MT_CTS, rts->cookie, 0);
	if (rc == 0)
		*cts_sent = true;
	else
		fi_cancel(&s->ep->fid, &op.op.fctx);
	ops_wait(s, p, &rd, &op, 1);
	if (rc == 0)
		rc = rd.status;
	if (rc == 0 && p->state == RMQ_PEER_DEAD && rd.status != 0)
		rc = -RMQ_ECONNRESET;
out:
	if (rd.mr != NULL)
		fi_close(&rd.mr->fid);
	return (int) rc;
}

/*
 * rndv_write, receiver side: register dst for remote writes, GRANT it to
 * the sender, and wait for the immediate of its last write.  *granted says
 * whether the sender was told (else it waits for a FIN).
 */
static int
rndv_grant(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rts *rts,
           void *dst, bool *granted)
{
	uint8_t           b[RMQ_RTS_SIZE];
	struct rmq_grant  g = {0}, **pp;
	struct rmq_hdr    h;
	struct rmq_rts    ext = {0};
	struct rmq_waiter w;
	struct fid_mr    *mr = NULL;
	uint64_t          key = 0;
	uint8_t           one;
	int               rc;

	*granted = false;
	/* A zero-byte grant still needs memory to name. */
	rc = rmq_mr_reg(s, rts->len ? dst : &one, rts->len ? rts->len : 1,
	                FI_REMOTE_WRITE, &mr, NULL, &key);
	if (rc != 0)
		return rc;
	do
		g.id = ++s->next_grant & 0x3fffffffu;
	while (g.id == 0);
	g.peer   = p;
	g.next   = s->grants;
	s->grants = &g;

	ext.len    = rts->len;
	ext.raddr  = s->dom->caps.mr_virt_addr ? (uint64_t) (uintptr_t) dst : 0;
	ext.rkey   = key;
	ext.cookie = g.id;
	rmq_hdr_fill(&h, p, RMQ_MT_GRANT, rts->cookie, 0);
	rmq_hdr_encode(b, &h);
	rmq_rts_encode(b + RMQ_HDR_SIZE, &ext);
	rmq_waiter_init(&w, 1000);
	rc = send_small(s, p, &w, b, sizeof(b));
	if (rc != 0) {
		p->owed += h.credits;
		goto out;
	}
	p->sent++; /* like CTS: counted in BYE */
	*granted = true;
	rmq_waiter_init(&w, -1);
	while (!g.done) {
		if (rmq_progress(s) > 0)
			continue;
		if (p->state == RMQ_PEER_DEAD) {
			g.status = -RMQ_ECONNRESET;
			break;
		}
		(void) rmq_wait_idle(s, &w);
	}
	rc = g.status;
out:
	for (pp = &s->grants; *pp != NULL; pp = &(*pp)->next)
		if (*pp == &g) {
			*pp = g.next;
			break;
		}
	fi_close(&mr->fid); /* revokes the peer's access */
	return rc;
}

typedef int (*rmq_fetch_fn)(struct rmq_socket *, struct rmq_peer *,
                            const struct rmq_rts *, void *, bool *);

/*
 * rndv_send and rndv_write move the whole message (a tagged receive, a
 * granted buffer), so a buffer shorter than it gets a bounce buffer and
 * the first n bytes.  *told: whether the sender was answered.
 */
static int
whole(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rxent *e,
      void *dst, size_t n, rmq_fetch_fn fn, bool *told)
{
	void *tmp = n < e->len ? malloc(e->len) : dst;
	int   rc;

	*told = false;
	if (tmp == NULL)
		return -RMQ_ENOMEM;
	rc = fn(s, p, &e->rts, tmp, told);
	if (tmp != dst) {
		if (rc == 0)
			memcpy(dst, tmp, n);
		free(tmp);
	}
	return rc;
}

/*
 * Fetch a rendezvous payload (n <= len bytes of it) into dst by the
 * sender's chosen path, and tell the sender how it went where it waits.
 */
static int
rndv_fetch(struct rmq_socket *s, struct rmq_peer *p, struct rmq_rxent *e,
           void *dst, size_t n)
{
	bool need_fin = true, told;
	int  rc;

	if (p->state == RMQ_PEER_DEAD) {
		rc       = -RMQ_ECONNRESET;
		need_fin = false;
	} else if (e->rts.flags & RMQ_RTS_F_SEND) {
		rc = whole(s, p, e, dst, n, rndv_trecv, &told);
		need_fin = !told;
	} else if ((e->rts.flags & RMQ_RTS_F_WRITE) && e->len == 0) {
		/*
		 * Nothing to write: the FIN says so.  (shm 1.17 never reports
		 * the immediate of a zero-byte writedata at the target.)
		 */
		rc = 0;
	} else if (e->rts.flags & RMQ_RTS_F_WRITE) {
		rc = whole(s, p, e, dst, n, rndv_grant, &told);
		need_fin = !told;
	} else {
		rc = rndv_read(s, p, &e->rts, dst, n);
	}
	if (need_fin && p->state != RMQ_PEER_DEAD)
		(void) rmq_xfer_ctl(s, p, RMQ_MT_FIN, e->rts.cookie,
		                    rc < 0 ? (uint32_t) -rc : 0);
	return rc;
}

static bool
is_rndv(const struct rmq_rxent *e)
{
	return e->path == RMQ_PATH_RNDV_READ || e->path == RMQ_PATH_RNDV_SEND ||
	       e->path == RMQ_PATH_RNDV_WRITE;
}

ssize_t
rmq_xfer_deliver(struct rmq_socket *s, struct rmq_rxent *e, void *buf,
                 size_t cap, rmq_msg **msgp)
{
	struct rmq_peer *p   = e->peer;
	size_t           len = e->len, n = len < cap ? len : cap;
	rmq_msg         *m   = NULL;
	ssize_t          rc  = (ssize_t) len;
	int              st;

	rmq_peer_hold(p);
	if (e->pull_status != 0) {
		rc = e->pull_status; /* a background pull failed: lost */
	} else if (is_rndv(e) && e->heap == NULL) {
		if (msgp != NULL) {
			m = rmq_msg_new_heap(len);
			if (m == NULL) {
				rc = -RMQ_ENOMEM;
				if (p->state != RMQ_PEER_DEAD)
					(void) rmq_xfer_ctl(s, p, RMQ_MT_FIN,
					                    e->rts.cookie, ENOMEM);
				goto done;
			}
			buf = rmq_msg_data(m);
			n   = len;
		}
		st = rndv_fetch(s, p, e, buf, n);
		if (st != 0) {
			rc = st;
			rmq_msg_free(m);
			m = NULL;
		}
	} else if (msgp != NULL) {
		if (e->heap != NULL) {
			m = rmq_msg_new_heap(0);
			if (m != NULL) {
				m->base = m->data = e->heap;
				m->size = len;
				e->heap = NULL;
			}
		} else if (e->slab == NULL) {
			/* ring: its slots go back to the sender now, so copy */
			m = rmq_msg_new_heap(len);
			if (m != NULL && len > 0)
				memcpy(rmq_msg_data(m), e->data, len);
		} else {
			m = rmq_msg_new_slab(e->slab, e->data, len);
			if (m != NULL)
				e->slab = NULL; /* the reference moves */
		}
		if (m == NULL)
			rc = -RMQ_ENOMEM;
	} else if (n > 0) {
		memcpy(buf, e->heap != NULL ? e->heap : e->data, n);
	}
done:
	if (rc >= 0) {
		s->stats.recv_msgs[e->path]++;
		s->stats.recv_bytes[e->path] += len;
		if (msgp != NULL)
			*msgp = m;
	} else {
		s->stats.dropped++;
	}
	rmq_consumed(s, p);
	rmq_rxent_free(s, e);
	rmq_peer_release(s, p);
	return rc;
}

void
rmq_xfer_discard(struct rmq_socket *s, struct rmq_rxent *e)
{
	struct rmq_peer *p = e->peer;

	if (is_rndv(e) && e->heap == NULL && e->pull_status == 0 &&
	    p->state != RMQ_PEER_DEAD)
		(void) rmq_xfer_ctl(s, p, RMQ_MT_FIN, e->rts.cookie,
		                    ECANCELED);
	s->stats.dropped++;
	rmq_peer_hold(p);
	rmq_consumed(s, p);
	rmq_rxent_free(s, e);
	rmq_peer_release(s, p);
}

void
rmq_xfer_pull_pending(struct rmq_socket *s)
{
	struct rmq_rxent *e;
	int               i, rc;

	if (s->nqueued == 0)
		return; /* the usual case, on every idle round of a send */
	for (i = 0; i < s->peers_cap; i++) {
		struct rmq_peer *p = s->peers[i];

		if (p == NULL || p->state == RMQ_PEER_DEAD)
			continue;
		for (e = p->qhead; e != NULL; e = e->next) {
			if (!is_rndv(e) || e->heap != NULL || e->pulling ||
			    e->pull_status != 0)
				continue;
			e->heap = malloc(e->len ? e->len : 1);
			if (e->heap == NULL)
				return;
			e->pulling = true;
			rc         = rndv_fetch(s, p, e, e->heap, e->len);
			e->pulling = false;
			if (rc != 0) {
				/* Delivered later as an error. */
				free(e->heap);
				e->heap        = NULL;
				e->pull_status = rc;
				return;
			}
		}
	}
}
