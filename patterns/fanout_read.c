/*
 * PUB/SUB's log, the subscriber's side (fanout.c has the publisher's and
 * the log's layout): read the publisher's entries in batches with
 * fi_read, take those marked for us, step over rewritten ones, and write
 * our cursor and count into our cell with fi_write.
 */
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "pattern.h"
#include "topics.h"
#include "util.h"
#include "wire.h"

#define RD_BATCH     16        /* entries one read copies, at most: */
#define RD_IDLE_MIN  10000     /* ns to the next look after an empty read, */
#define RD_IDLE_MAX  1000000   /* doubling up to this while none has data */
#define RD_FAILS_MAX 1000      /* reads failing in a row: give up */

enum { RD_WAIT_PUSHED, RD_RUN, RD_BIG, RD_BIG_CHECK, RD_GONE, RD_FAILED };

struct ps_reader {
	struct ps_reader     *link;  /* the socket's list */
	struct rmq_socket    *s;
	struct sub_state     *st;
	struct sub_peer      *sp;    /* NULL once gone */
	struct rmq_pat_mem   *buf;   /* RD_BATCH entries */
	struct rmq_pat_mem   *cell;  /* our cursor, for fi_write */
	struct rmq_pat_mem   *big;   /* an out-of-line payload coming */
	struct rmq_pat_rma   *rd, *wr;
	struct rmq_pat_timer *tm;
	uint64_t              raddr, rkey, caddr, ckey;
	uint32_t              S, Z, idx, nread;
	size_t                big_len;
	uint32_t              big_fl;    /* its entry's flags */
	uint64_t              next;      /* the seq we read next */
	uint64_t              pushed;    /* messages pushed before the log */
	uint64_t              took;      /* entries for us we took */
	uint64_t              reported;  /* the cursor last written */
	bool                  dirty;     /* a cursor to write after this */
	int                   state;
	unsigned              fails;     /* reads failed in a row */
	unsigned              torn;      /* copies of one entry that did not
	                                  * check out, in a row */
	bool                  closing;   /* our socket closes: no more */
	int64_t               idle_ns;   /* the next look's delay */
	bool                  in_msg;    /* the frame last taken said more
	                                  * follow */
	bool                  skip_cont; /* an entry was missed: frames after
	                                  * a first are stepped over until
	                                  * the next first */
	uint32_t              batch;     /* entries the next read copies:
	                                  * twice what the last one found, so
	                                  * a reader that keeps up does not
	                                  * copy (and contend for) entries
	                                  * still being written */
};

static void rd_kick(struct ps_reader *r);

static bool
rd_idle(const struct ps_reader *r)
{
	return !rmq_pat_rma_busy(r->rd) && !rmq_pat_rma_busy(r->wr);
}

static void
rd_free(struct ps_reader *r)
{
	struct ps_reader **pp;

	for (pp = &r->st->readers; *pp != NULL; pp = &(*pp)->link)
		if (*pp == r) {
			*pp = r->link;
			break;
		}
	rmq_pat_timer_free(r->tm);
	rmq_pat_rma_free(r->rd);
	rmq_pat_rma_free(r->wr);
	rmq_pat_mem_free(r->buf);
	rmq_pat_mem_free(r->cell);
	rmq_pat_mem_free(r->big);
	free(r);
}

/* Gone, with nothing in flight: free it (memory a read lands in stays
 * until then). */
static bool
rd_reap(struct ps_reader *r)
{
	if (r->state != RD_GONE || !rd_idle(r))
		return false;
	rd_free(r);
	return true;
}

static void
rd_write_cursor(struct ps_reader *r)
{
	uint8_t *c = rmq_pat_mem_buf(r->cell);
	int      rc;

	if (r->sp == NULL || r->reported == r->next || r->closing ||
	    !rmq_pat_peer_live(r->sp->p))
		return;
	if (rmq_pat_rma_busy(r->wr)) {
		r->dirty = true;
		return;
	}
	st64(c, r->next);
	st64(c + 8, r->took);
	st64(c + 16, cell_check(r->next, r->took));
	rc = rmq_pat_write(r->wr, r->sp->p, r->cell, 0, 24, r->caddr,
	                   r->ckey);
	if (rc == 0) {
		r->reported = r->next;
		r->dirty    = false;
	} else {
		r->dirty = true; /* the provider is busy: at the next kick */
	}
}

static void
rd_wr_done(void *arg, int status)
{
	struct ps_reader *r = arg;

	RMQ_UNUSED(status);
	if (rd_reap(r))
		return;
	if (r->dirty)
		rd_write_cursor(r);
}

/* Step over entry next (rewritten before we took it), or, seeing seq s
 * written where it was, over every entry s rewrote. */
static void
rd_skip(struct ps_reader *r, uint64_t s_seen)
{
	rmq_log(RMQ_LOG_DEBUG, "sub: log entry %llu rewritten before it was "
	        "taken (saw %llu)", (unsigned long long) r->next,
	        (unsigned long long) s_seen);
	/* It may have been a frame of a message: the message goes whole. */
	if (r->in_msg && r->sp != NULL)
		rmq_pat_cut(r->s, r->sp->p);
	r->in_msg    = false;
	r->skip_cont = true;
	r->next++;
	if (s_seen != E_BUSY && s_seen >= r->S && s_seen - r->S + 1 > r->next)
		r->next = s_seen - r->S + 1;
}

/* The out-of-line payload under way is not taken. */
static void
rd_big_drop(struct ps_reader *r)
{
	rmq_pat_mem_free(r->big);
	r->big = NULL;
}

/* A frame for us, taken: queued with its message's others (one that
 * cannot be drops its message, the core stepping over the rest). */
static void
rd_deliver(struct ps_reader *r, void *heap, size_t len, uint32_t fl)
{
	r->in_msg = (fl & E_F_MORE) != 0;
	(void) rmq_pat_deliver(r->s, r->sp->p, heap, len, r->in_msg);
	r->took++;
	r->next++;
}

/* An out-of-line payload: read it, then the entry again. */
static int
rd_big(struct ps_reader *r, const uint8_t *e, size_t len, uint32_t fl)
{
	void *heap = malloc(len ? len : 1);
	int   rc;

	if (heap == NULL)
		return -RMQ_ENOMEM;
	rc = rmq_pat_mem_wrap(r->s, heap, len ? len : 1, RMQ_PAT_READ_INTO,
	                      &r->big);
	if (rc != 0) {
		free(heap);
		return rc;
	}
	r->big_len = len;
	r->big_fl  = fl;
	rc = rmq_pat_read(r->rd, r->sp->p, r->big, 0, len, ld64(e + E_BODY),
	                  ld64(e + E_BODY + 8));
	if (rc != 0) {
		rd_big_drop(r);
		return rc;
	}
	r->state = RD_BIG;
	return 0;
}

/* The entries of the read that just landed.  False: stop here (an
 * out-of-line read is on, or read again from next). */
static bool
rd_take(struct ps_reader *r, uint32_t n, bool *got)
{
	const uint8_t *e;
	uint64_t       h, t, want;
	uint32_t       i, len, fl;
	void          *heap;
	int            rc;

	for (i = 0; i < n; i++) {
		e    = (uint8_t *) rmq_pat_mem_buf(r->buf) + (size_t) i * r->Z;
		want = r->next + 1;
		h    = ld64(e + E_H);
		t    = ld64(e + r->Z - 8);
		if (h == want && t == E_GONE) {
			*got = true; /* retired early: missed */
			rd_skip(r, E_BUSY);
			continue;
		}
		if (h != want || t != want) {
			/* Being written (H is ours, T not yet), or not yet:
			 * again later.  Else rewritten before we took it: the
			 * next entry of the copy is the next seq, unless we
			 * learnt that more are gone. */
			if (h <= want && (t <= want || t == E_BUSY))
				return true;
			*got = true;
			rd_skip(r, h > want ? h - 1 : E_BUSY);
			if (r->next != want)
				return false;
			continue;
		}
		memcpy(&len, e + E_LEN, 4);
		memcpy(&fl, e + E_FLAGS, 4);
		/* A copy that raced a rewrite: again (a length beyond the
		 * entry is one, or a bad publisher's). */
		if ((!(fl & E_F_OOL) && len > r->Z - E_TAIL) ||
		    ld64(e + E_SUM) !=
		        ps_entry_sum(want - 1, e, (fl & E_F_OOL) ? 16 : len)) {
			if (++r->torn == RD_FAILS_MAX) {
				rmq_log(RMQ_LOG_WARN, "sub: a publisher's log "
				        "entry never checks out: reading it no "
				        "more");
				r->state = RD_FAILED;
			}
			return false;
		}
		r->torn = 0;
		*got    = true;
		if (!(fl & E_F_CONT))
			r->skip_cont = false; /* a message's first frame */
		if (!(ld64(e + E_MASK) & (1ull << r->idx)) || r->skip_cont) {
			r->next++; /* not for us, or its first was missed */
			continue;
		}
		if (fl & E_F_OOL) {
			rc = rd_big(r, e, len, fl);
			if (rc == -RMQ_EAGAIN || rc == -RMQ_ENOMEM)
				rmq_pat_timer_at(r->tm, rmq_pat_now());
			else if (rc != 0)
				rd_skip(r, E_BUSY); /* its block is gone */
			return false;
		}
		heap = malloc(len ? len : 1);
		if (heap == NULL)
			return false; /* again later */
		rmq_copy(heap, e + E_BODY, len);
		rd_deliver(r, heap, len, fl);
	}
	return true;
}

/* The payload is in; its entry read again: is it still the one? */
static void
rd_big_checked(struct ps_reader *r)
{
	const uint8_t *e    = rmq_pat_mem_buf(r->buf);
	uint64_t       want = r->next + 1;
	void          *heap;

	heap   = rmq_pat_mem_unwrap(r->big);
	r->big = NULL;
	if (ld64(e + E_H) == want && ld64(e + r->Z - 8) == want) {
		rd_deliver(r, heap, r->big_len, r->big_fl);
	} else {
		free(heap);
		rd_skip(r, E_BUSY); /* rewritten while we read it */
	}
}

static void
rd_done(void *arg, int status)
{
	struct ps_reader *r   = arg;
	bool              got = false, took;
	int64_t           now;
	uint64_t          before;
	uint32_t          slot, n;

	if (rd_reap(r))
		return;
	if (r->sp == NULL)
		return;
	if (r->state == RD_BIG) {
		/* The payload landed (or its block is gone): the entry
		 * again, to know it was not rewritten meanwhile. */
		if (status != 0) {
			rd_big_drop(r);
			r->state = RD_RUN;
			rd_skip(r, E_BUSY);
			rd_kick(r);
			return;
		}
		slot     = (uint32_t) (r->next % r->S);
		r->state = RD_BIG_CHECK;
		if (rmq_pat_read(r->rd, r->sp->p, r->buf, 0, r->Z,
		                 r->raddr + (uint64_t) slot * r->Z,
		                 r->rkey) != 0) {
			rd_big_drop(r);
			r->state = RD_RUN;
			rmq_pat_timer_at(r->tm, rmq_pat_now());
		}
		return;
	}
	if (status != 0) {
		if (r->state == RD_BIG_CHECK) {
			rd_big_drop(r);
			r->state = RD_RUN;
		}
		/* Again in a while (tcp;ofi_rxm fails a read now and then
		 * while its connection settles); a publisher that is going
		 * is seen to go meanwhile. */
		if (++r->fails == RD_FAILS_MAX) {
			rmq_log(RMQ_LOG_WARN, "sub: %u reads of a publisher's "
			        "log failed in a row: reading it no more",
			        r->fails);
			r->state = RD_FAILED;
			return;
		}
		rmq_pat_timer_at(r->tm, rmq_pat_now() + RD_IDLE_MAX);
		return;
	}
	r->fails = 0;
	if (r->state == RD_BIG_CHECK) {
		r->state = RD_RUN;
		rd_big_checked(r);
		got = true;
	} else if (r->state == RD_RUN) {
		before   = r->next;
		took     = rd_take(r, r->nread, &got);
		n        = (uint32_t) (r->next - before);
		r->batch = n >= RD_BATCH / 2 ? RD_BATCH : n < 1 ? 2 : 2 * n;
		if (!took && (r->state == RD_BIG || r->state == RD_FAILED))
			return;
	}
	/* Tell the publisher where we are: every eighth of the log, and
	 * when we caught up. */
	if (r->next - r->reported >= r->S / 8 || !got)
		rd_write_cursor(r);
	if (got) {
		r->idle_ns = 0;
		rd_kick(r);
		return;
	}
	/* Nothing new: look again soon, less often while nothing comes (a
	 * wait sleeps until then; a spinning one runs it on time). */
	now        = rmq_pat_now();
	r->idle_ns = r->idle_ns == 0 ? RD_IDLE_MIN
	             : 2 * r->idle_ns > RD_IDLE_MAX ? RD_IDLE_MAX
	                                            : 2 * r->idle_ns;
	rmq_pat_timer_at(r->tm, now + r->idle_ns);
}

static void
rd_kick(struct ps_reader *r)
{
	uint32_t slot, n;
	int      rc;

	if (r->sp == NULL || r->closing)
		return;
	if (r->state == RD_WAIT_PUSHED) {
		if (rmq_pat_peer_recvd(r->sp->p) < r->pushed) {
			rmq_pat_timer_at(r->tm, rmq_pat_now());
			return;
		}
		r->state = RD_RUN;
	}
	if (r->state != RD_RUN || rmq_pat_rma_busy(r->rd))
		return;
	/* Its BYE came after we read its log to the end (its close waits
	 * for our cursors): read no more of memory about to go. */
	if (!rmq_pat_peer_live(r->sp->p))
		return;
	if (r->dirty)
		rd_write_cursor(r);
	/* Our queue is at RMQ_RCVHWM: read once the application took some. */
	if (rmq_pat_peer_queued(r->sp->p) >= (size_t) rmq_pat_rcvhwm(r->s)) {
		rd_write_cursor(r);
		rmq_pat_timer_at(r->tm, rmq_pat_now() + RD_IDLE_MAX / 10);
		return;
	}
	slot = (uint32_t) (r->next % r->S);
	n    = r->batch != 0 ? r->batch : RD_BATCH;
	n    = r->S - slot < n ? r->S - slot : n;
	rc   = rmq_pat_read(r->rd, r->sp->p, r->buf, 0, (size_t) n * r->Z,
	                    r->raddr + (uint64_t) slot * r->Z, r->rkey);
	if (rc == 0)
		r->nread = n;
	else if (rc == -RMQ_EAGAIN)
		rmq_pat_timer_at(r->tm, rmq_pat_now()); /* the next round */
	else
		r->state = RD_FAILED;
}

static void
rd_timer(void *arg, int64_t now)
{
	struct ps_reader *r = arg;

	RMQ_UNUSED(now);
	rd_kick(r);
}

static int
rd_new(struct rmq_socket *s, struct sub_state *st, struct sub_peer *sp,
       const uint8_t *b)
{
	struct ps_reader *r;
	int               rc;

	if (sp->rd != NULL)
		return -RMQ_EPROTO; /* one log per publisher */
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -RMQ_ENOMEM;
	r->s        = s;
	r->st       = st;
	r->sp       = sp;
	r->idx      = rmq_get32(b);
	r->S        = rmq_get32(b + 4);
	r->Z        = rmq_get32(b + 8);
	r->next     = rmq_get64(b + 12);
	r->pushed   = rmq_get64(b + 20);
	r->raddr    = rmq_get64(b + 28);
	r->rkey     = rmq_get64(b + 36);
	r->caddr    = rmq_get64(b + 44);
	r->ckey     = rmq_get64(b + 52);
	r->reported  = r->next;
	r->state     = RD_WAIT_PUSHED;
	r->skip_cont = true; /* from a message's first frame on */
	if (r->idx >= PS_LOG_SUBS || r->S < 16 || r->S > 65536 || r->Z < 64 ||
	    r->Z % 8 != 0 || r->Z > 64 * 1024) {
		free(r);
		return -RMQ_EPROTO;
	}
	r->rd = rmq_pat_rma_new(s, rd_done, r);
	r->wr = rmq_pat_rma_new(s, rd_wr_done, r);
	r->tm = rmq_pat_timer_new(s, rd_timer, r);
	rc    = r->rd && r->wr && r->tm ? 0 : -RMQ_ENOMEM;
	if (rc == 0)
		rc = rmq_pat_mem_new(s, (size_t) RD_BATCH * r->Z,
		                     RMQ_PAT_READ_INTO, &r->buf);
	if (rc == 0)
		rc = rmq_pat_mem_new(s, CELL, RMQ_PAT_WRITE_FROM, &r->cell);
	r->link     = st->readers;
	st->readers = r;
	if (rc != 0) {
		rd_free(r);
		return rc;
	}
	sp->rd = r;
	rmq_pat_timer_at(r->tm, rmq_pat_now());
	return 0;
}

int
ps_reader_frame(struct rmq_socket *s, struct sub_state *st,
                struct sub_peer *sp, const uint8_t *body, size_t len)
{
	if (body[0] != SUB_OP_LOG || len != LOG_FRAME)
		return -RMQ_EPROTO;
	/* Without memory for it, the publisher's marks for us are missed
	 * and counted as dropped. */
	return rd_new(s, st, sp, body + SUB_FRAME_HDR) == -RMQ_EPROTO
	           ? -RMQ_EPROTO
	           : 0;
}

bool
ps_reader_quiet(const struct sub_peer *sp)
{
	return sp->rd == NULL || rd_idle(sp->rd);
}

void
ps_reader_gone(struct sub_state *st, struct sub_peer *sp)
{
	struct ps_reader *r = sp->rd;

	RMQ_UNUSED(st);
	if (r == NULL)
		return;
	sp->rd   = NULL;
	r->sp    = NULL;
	r->state = RD_GONE;
	rmq_pat_timer_at(r->tm, INT64_MAX);
	(void) rd_reap(r);
}

bool
ps_readers_stop(struct sub_state *st)
{
	struct ps_reader *r;
	bool              idle = true;

	for (r = st->readers; r != NULL; r = r->link) {
		r->closing = true;
		rmq_pat_timer_at(r->tm, INT64_MAX);
		idle = idle && rd_idle(r);
	}
	return idle;
}

void
ps_readers_free(struct sub_state *st)
{
	while (st->readers != NULL)
		rd_free(st->readers);
}
