/*
 * PUB/SUB's log (FASTPS; rmq_pubsub(7)).  From thresholds.fanout_log
 * subscribers on, a publisher writes each message once into a registered
 * log of fanout.slots entries; its subscribers (the first 64) read it with
 * fi_read, and the publisher's work per message no longer grows with
 * them.  The publisher still filters: each entry carries a mask of the
 * subscribers it is for, and the others step over it.
 *
 * An entry (slot_size bytes, host byte order: one host's memory):
 *
 *   0        u64 H     seq + 1
 *   8        u64 mask  bit i: log subscriber i takes it
 *   16       u32 len   payload bytes
 *   20       u32 flags 1: out of line
 *   24       u64 sum   ps_entry_sum(seq, mask, len, flags, body)
 *   32       payload (len <= slot_size - 40), or out of line:
 *            u64 addr | u64 key of a block registered for it alone
 *   Z - 8    u64 T     ~0 while it is being written (E_GONE: retired
 *                      early), then seq + 1
 *
 * The publisher writes T = ~0, the body and its sum, H, then T.  A reader
 * copies the entry in one fi_read and takes it only if H and T both say
 * the seq it expects and the sum checks out.  H and T alone would do
 * where a copy runs in address order; a CMA copy (a CPU's fast string
 * copy) need not: here rmq_fanout once delivered a previous lap's body
 * under a header and trailer that were right (rarely: docs/INTERNALS.md
 * §17, "the fan-out log").  The sum is computed once per message, not
 * per subscriber.  An out-of-line payload is read after its entry (the
 * block is written before the entry and never changes), then the entry
 * again: the payload counts only if T still says the seq, that is, the
 * entry was not rewritten or retired meanwhile.
 *
 * Each subscriber writes into its cell of a second registered block, with
 * fi_write, its cursor (the next seq it reads) and how many entries marked
 * for it it took; the publisher reads the cells from its own memory and
 * never waits for a message to learn where its subscribers are.
 *
 * High-water mark: the log is a subscriber's queue on the publisher's
 * side, and it loses the oldest.  By default the publisher rewrites the
 * oldest entry whoever has not read it: a subscriber that fell a whole
 * log behind (it stopped reading: its RMQ_RCVHWM is full, or it did not
 * progress) finds the entries it missed rewritten and steps over them to
 * the oldest still there.  Its next cursor settles the count: what was
 * marked for it before that cursor, less what it says it took, is dropped
 * (rmq_stats().dropped), so received + dropped = sent holds once each
 * subscriber's cursor passed the end.  With RMQ_NODROP the publisher
 * waits instead, until every subscriber read the entry it would rewrite
 * and the ones the message is for are less than half a log behind.
 *
 * A subscriber moved from push to the log reads no entry before the
 * messages pushed to it until then (LOG carries their count) are in.
 */
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "pattern.h"
#include "topics.h"
#include "util.h"
#include "wire.h"

#define GRAVE_NS 200000000   /* a rewritten entry's out-of-line block
                              * stays this long: a read of it may be
                              * under way */
#define OOL_MAX   (256u << 20) /* bytes of out-of-line payloads a log
                                * holds (or twice the message) */
#define SETTLE_NS 1000000    /* the publisher reads the cells this often
                              * while it progresses */

/* ---- publisher ---- */

struct grave {
	struct rmq_pat_mem *m;
	int64_t             when;
};

struct ps_log {
	struct rmq_socket    *s;
	struct pub_state     *st;
	struct rmq_pat_mem   *ring, *cells;
	struct rmq_pat_mem  **ool;       /* per entry: its out-of-line block */
	size_t               *ool_len;   /* and its size */
	size_t                ool_bytes; /* of the live entries' blocks */
	uint64_t              ool_old;   /* no live block is older */
	struct grave         *graves;    /* rewritten entries' blocks, oldest
	                                  * first (a ring) */
	int                   g_head, g_n, g_cap;
	struct rmq_pat_timer *tm;
	uint32_t              S, Z;
	uint64_t              head;      /* the next seq */
	uint64_t              used;      /* indices taken */
	uint64_t              fmask;     /* the mask of the message's first
	                                  * frame (its others go where it
	                                  * went) */
	bool                  open;      /* the last entry said more follow */
	struct pub_peer      *by[PS_LOG_SUBS];
};

/*
 * Take in sp's cell: its cursor, and what it missed -- marked for it
 * before that cursor, less what it took -- counted.  A torn or impossible
 * cell is not taken, nor one whose cursor's entry was rewritten already
 * (how many were marked before it is gone): a later one will be.
 */
static uint64_t
settle(struct ps_log *lg, struct pub_peer *sp)
{
	const uint8_t *c = (uint8_t *) rmq_pat_mem_buf(lg->cells) +
	                   (size_t) sp->idx * CELL;
	uint64_t       cur = ld64(c), took = ld64(c + 8), m;

	if (ld64(c + 16) != cell_check(cur, took) || cur <= sp->cursor ||
	    cur > lg->head || lg->head - cur > lg->S || took < sp->took)
		return sp->cursor;
	m = cur == lg->head ? sp->marked : sp->cm[cur % lg->S];
	if (m - sp->mprev < took - sp->took)
		return sp->cursor; /* took more than was marked: not so */
	rmq_pat_count_drops(lg->s, m - sp->mprev - (took - sp->took));
	sp->mprev  = m;
	sp->cursor = cur;
	sp->took   = took;
	return cur;
}

static void
graves_free(struct ps_log *lg, int64_t now)
{
	struct grave *g;

	while (lg->g_n > 0) {
		g = &lg->graves[lg->g_head];
		if (now - g->when < GRAVE_NS)
			break;
		rmq_pat_mem_free(g->m);
		lg->g_head = (lg->g_head + 1) % lg->g_cap;
		lg->g_n--;
	}
}

static void
log_timer(void *arg, int64_t now)
{
	struct ps_log *lg = arg;
	uint64_t       m;

	for (m = lg->used; m != 0; m &= m - 1)
		(void) settle(lg, lg->by[__builtin_ctzll(m)]);
	graves_free(lg, now);
	rmq_pat_timer_at(lg->tm, now + SETTLE_NS);
}

/* A pattern frame to p, failing p if it cannot go. */
static void
ps_tell(struct rmq_socket *s, struct rmq_peer *p, int op, const void *body,
        size_t len)
{
	uint8_t b[LOG_FRAME];

	(void) rmq_pat_ctrl_send(s, p, b, ps_frame(b, op, 0, body, len));
}

void
ps_log_join(struct rmq_socket *s, struct pub_state *st, struct pub_peer *sp)
{
	struct ps_log *lg = st->log;
	uint8_t        b[LOG_FRAME - SUB_FRAME_HDR], *c;
	uint64_t       addr, key, caddr, ckey;
	int            i;

	if (lg == NULL || sp->mode != PS_PUSH || !sp->synced ||
	    lg->used == UINT64_MAX || rmq_pat_peer_host(sp->p))
		return; /* no log, it is full, or the peer is on this host
		         * (its ring takes a copy): pushed to */
	/* Between a message's frames, the rest of it is pushed to the
	 * subscriber its first went to: the log would overtake them. */
	sp->join_later = rmq_pat_sending_frames(s);
	if (sp->join_later)
		return;
	sp->cm = calloc(lg->S, sizeof(uint64_t));
	if (sp->cm == NULL)
		return;
	for (i = 0; lg->used & (1ull << i); i++)
		;
	lg->used |= 1ull << i;
	lg->by[i]  = sp;
	sp->idx    = i;
	sp->mode   = PS_LOG;
	sp->cursor = lg->head;
	sp->took   = 0;
	sp->marked = 0;
	sp->mprev  = 0;
	c = (uint8_t *) rmq_pat_mem_buf(lg->cells) + (size_t) i * CELL;
	st64(c, lg->head);
	st64(c + 8, 0);
	st64(c + 16, cell_check(lg->head, 0));
	rmq_pat_mem_remote(lg->ring, &addr, &key);
	rmq_pat_mem_remote(lg->cells, &caddr, &ckey);
	rmq_put32(b, (uint32_t) i);
	rmq_put32(b + 4, lg->S);
	rmq_put32(b + 8, lg->Z);
	rmq_put64(b + 12, lg->head);
	rmq_put64(b + 20, rmq_pat_peer_sent(sp->p));
	rmq_put64(b + 28, addr);
	rmq_put64(b + 36, key);
	rmq_put64(b + 44, caddr + (uint64_t) i * CELL);
	rmq_put64(b + 52, ckey);
	ps_tell(s, sp->p, SUB_OP_LOG, b, sizeof(b));
}

void
ps_log_join_later(struct rmq_socket *s, struct pub_state *st)
{
	int i;

	for (i = 0; i < st->nsubs; i++)
		if (st->subs[i]->join_later)
			ps_log_join(s, st, st->subs[i]);
}

bool
ps_log_open(const struct pub_state *st)
{
	return st->log != NULL && st->log->open;
}

int
ps_log_maybe_start(struct rmq_socket *s, struct pub_state *st)
{
	struct ps_log *lg;
	int            th = rmq_pat_fanout_log(s), i, rc, remote = 0;

	if (th <= 0 || st->nsubs < th)
		return 0; /* every send looks: the usual answer first */
	/* Subscribers on this host are pushed to through their rings: the
	 * log is for the others. */
	for (i = 0; i < st->nsubs; i++)
		remote += !rmq_pat_peer_host(st->subs[i]->p);
	if (remote < th)
		return 0;
	lg = calloc(1, sizeof(*lg));
	if (lg == NULL)
		return 0; /* pushed to, then */
	lg->s  = s;
	lg->st = st;
	rmq_pat_log_shape(s, &lg->S, &lg->Z);
	lg->ool     = calloc(lg->S, sizeof(*lg->ool));
	lg->ool_len = calloc(lg->S, sizeof(*lg->ool_len));
	lg->tm      = rmq_pat_timer_new(s, log_timer, lg);
	rc          = lg->ool == NULL || lg->ool_len == NULL || lg->tm == NULL
	                  ? -RMQ_ENOMEM
	                  : 0;
	if (rc == 0)
		rc = rmq_pat_mem_new(s, (size_t) lg->S * lg->Z,
		                     RMQ_PAT_REMOTE_READ, &lg->ring);
	if (rc == 0)
		rc = rmq_pat_mem_new(s, PS_LOG_SUBS * CELL,
		                     RMQ_PAT_REMOTE_WRITE, &lg->cells);
	if (rc != 0) {
		rmq_log(RMQ_LOG_WARN, "pub: no fan-out log (%s): pushing to "
		        "every subscriber", rmq_strerror(rc));
		rmq_pat_mem_free(lg->ring);
		rmq_pat_timer_free(lg->tm);
		free(lg->ool);
		free(lg->ool_len);
		free(lg);
		return 0;
	}
	st->log = lg;
	rmq_pat_timer_at(lg->tm, rmq_pat_now() + SETTLE_NS);
	for (i = 0; i < st->nsubs; i++)
		ps_log_join(s, st, st->subs[i]);
	return 0;
}

void
ps_log_leave(struct pub_state *st, struct pub_peer *sp)
{
	struct ps_log *lg = st->log;

	if (lg == NULL || sp->mode == PS_PUSH)
		return;
	(void) settle(lg, sp); /* its last word */
	lg->used &= ~(1ull << sp->idx);
	lg->by[sp->idx] = NULL;
	free(sp->cm);
	sp->cm = NULL;
	sp->mode  = PS_PUSH;
	sp->idx   = -1;
}

/* A rewritten entry's out-of-line block: freed once no read of it can be
 * under way. */
static void
ool_drop(struct ps_log *lg, uint32_t slot)
{
	struct rmq_pat_mem *m = lg->ool[slot];
	struct grave       *n;
	int                 i, cap;

	if (m == NULL)
		return;
	lg->ool[slot]   = NULL;
	lg->ool_bytes  -= lg->ool_len[slot];
	if (lg->g_n == lg->g_cap) {
		cap = lg->g_cap ? 2 * lg->g_cap : 64;
		n   = malloc((size_t) cap * sizeof(*n));
		if (n == NULL) {
			rmq_pat_mem_free(m);
			return;
		}
		for (i = 0; i < lg->g_n; i++)
			n[i] = lg->graves[(lg->g_head + i) % lg->g_cap];
		free(lg->graves);
		lg->graves = n;
		lg->g_cap  = cap;
		lg->g_head = 0;
	}
	lg->graves[(lg->g_head + lg->g_n) % lg->g_cap] =
	    (struct grave){m, rmq_pat_now()};
	lg->g_n++;
}

struct append {
	struct pub_state *st;
	const uint8_t    *b;
	size_t            len;
	bool              any; /* b NULL: a message every one takes */
};

/* RMQ_NODROP: may entry head be written (every subscriber read the one
 * it replaces), and is every subscriber it is for under half a log
 * behind? */
static int
log_ready(struct rmq_socket *s, void *arg)
{
	struct append   *a  = arg;
	struct ps_log   *lg = a->st->log;
	struct pub_peer *sp;
	uint64_t         cur, m;

	RMQ_UNUSED(s);
	for (m = lg->used; m != 0; m &= m - 1) {
		sp  = lg->by[__builtin_ctzll(m)];
		cur = settle(lg, sp);
		if (lg->head >= lg->S && cur <= lg->head - lg->S)
			return 0;
		if (lg->head - cur >= lg->S / 2 &&
		    (a->any || ps_match(&sp->subs, a->b, a->len)))
			return 0;
	}
	return 1;
}

bool
ps_log_room(struct rmq_socket *s, struct pub_state *st)
{
	struct append a = {st, NULL, 0, true};

	return log_ready(s, &a) == 1;
}

struct ool_wait {
	struct ps_log *lg;
	uint64_t       seq;
};

/* RMQ_NODROP: every subscriber read entry seq. */
static int
read_by_all(struct rmq_socket *s, void *arg)
{
	struct ool_wait *w = arg;
	uint64_t         m;

	RMQ_UNUSED(s);
	for (m = w->lg->used; m != 0; m &= m - 1)
		if (settle(w->lg, w->lg->by[__builtin_ctzll(m)]) <= w->seq)
			return 0;
	return 1;
}

/*
 * Room for len more bytes of out-of-line payloads: the oldest live
 * entries with one give theirs back -- once every subscriber read them
 * (RMQ_NODROP), or retired at once (T = E_GONE: a reader steps over it, a
 * miss its cursor settles).  0 or -RMQ_EAGAIN.
 */
static int
ool_room(struct rmq_socket *s, struct pub_state *st, size_t len, int flags,
         int tmo)
{
	struct ps_log  *lg  = st->log;
	size_t          cap = len > OOL_MAX / 2 ? 2 * len : OOL_MAX;
	struct ool_wait w   = {lg, 0};
	uint32_t        slot;
	uint8_t        *e;
	int             rc;

	if (lg->head >= lg->S && lg->ool_old < lg->head - lg->S)
		lg->ool_old = lg->head - lg->S;
	while (lg->ool_bytes + len > cap && lg->ool_old < lg->head) {
		slot = (uint32_t) (lg->ool_old % lg->S);
		if (lg->ool[slot] == NULL) {
			lg->ool_old++;
			continue;
		}
		e = (uint8_t *) rmq_pat_mem_buf(lg->ring) + (size_t) slot * lg->Z;
		if (st->nodrop) {
			w.seq = lg->ool_old;
			rc = rmq_pat_wait(s, flags, tmo, read_by_all, &w);
			if (rc != 0)
				return rc;
		} else {
			st64(e + lg->Z - 8, E_GONE);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		}
		ool_drop(lg, slot);
		lg->ool_old++;
	}
	return 0;
}

int
ps_log_append(struct rmq_socket *s, struct pub_state *st, const uint8_t *b,
              size_t len, int flags, unsigned fr)
{
	struct ps_log      *lg = st->log;
	struct append       a  = {st, b, len, (fr & PS_FR_CONT) != 0};
	int                 tmo = rmq_pat_sndtimeo(s);
	struct pub_peer    *sp;
	struct rmq_pat_mem *ool = NULL;
	uint64_t            q = lg->head, mask = 0, raddr, rkey, m;
	uint32_t            slot = (uint32_t) (q % lg->S), fl = 0;
	uint32_t            len32 = (uint32_t) len;
	uint8_t            *e = (uint8_t *) rmq_pat_mem_buf(lg->ring) +
	                       (size_t) slot * lg->Z;
	void               *heap;
	int                 i, rc;

	if (len > UINT32_MAX)
		return -RMQ_EMSGSIZE;
	/* Once a message began, its frames wait as long as they must: its
	 * readers hold its first ones until its last. */
	if (fr & PS_FR_CONT) {
		flags &= ~RMQ_DONTWAIT;
		tmo    = -1;
	}
	if (st->nodrop) {
		rc = rmq_pat_wait(s, flags, tmo, log_ready, &a);
		if (rc != 0)
			return rc;
	}
	/* Too large to sit in the entry: registered once, read by all. */
	if (len > lg->Z - E_TAIL) {
		rc = ool_room(s, st, len, flags, tmo);
		if (rc != 0)
			return rc;
		heap = malloc(len);
		if (heap == NULL)
			return -RMQ_ENOMEM;
		rmq_copy(heap, b, len);
		rc = rmq_pat_mem_wrap(s, heap, len, RMQ_PAT_REMOTE_READ, &ool);
		if (rc != 0) {
			free(heap);
			return rc;
		}
		fl = E_F_OOL;
	}
	fl |= (fr & PS_FR_MORE ? E_F_MORE : 0) | (fr & PS_FR_CONT ? E_F_CONT : 0);
	for (m = lg->used; m != 0; m &= m - 1) {
		i  = __builtin_ctzll(m);
		sp = lg->by[i];
		sp->cm[slot] = sp->marked;
		if ((fr & PS_FR_CONT) ? !(lg->fmask & (1ull << i))
		                      : !ps_match(&sp->subs, b, len))
			continue;
		mask |= 1ull << i;
		sp->marked++;
	}
	if (!(fr & PS_FR_CONT))
		lg->fmask = mask;
	lg->open = (fr & PS_FR_MORE) != 0;
	st64(e + lg->Z - 8, E_BUSY);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	ool_drop(lg, slot); /* after T says the entry is no more */
	st64(e + E_MASK, mask);
	memcpy(e + E_LEN, &len32, 4);
	memcpy(e + E_FLAGS, &fl, 4);
	if (ool != NULL) {
		lg->ool[slot]     = ool;
		lg->ool_len[slot] = len;
		lg->ool_bytes    += len;
		rmq_pat_mem_remote(ool, &raddr, &rkey);
		st64(e + E_BODY, raddr);
		st64(e + E_BODY + 8, rkey);
	} else if (len > 0) {
		rmq_copy(e + E_BODY, b, len);
	}
	st64(e + E_SUM, ps_entry_sum(q, e, ool != NULL ? 16 : len));
	__atomic_thread_fence(__ATOMIC_RELEASE);
	st64(e + E_H, q + 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	st64(e + lg->Z - 8, q + 1);
	lg->head = q + 1;
	return 0;
}

int
ps_log_count(const struct pub_state *st)
{
	return st->log != NULL ? __builtin_popcountll(st->log->used) : 0;
}

bool
ps_log_flushed(struct pub_state *st)
{
	struct ps_log *lg = st->log;
	uint64_t       m;

	if (lg == NULL)
		return true;
	for (m = lg->used; m != 0; m &= m - 1)
		if (settle(lg, lg->by[__builtin_ctzll(m)]) < lg->head)
			return false;
	return true;
}

void
ps_log_free(struct pub_state *st)
{
	struct ps_log *lg = st->log;
	uint32_t       i;

	if (lg == NULL)
		return;
	for (i = 0; i < lg->S; i++)
		rmq_pat_mem_free(lg->ool[i]);
	graves_free(lg, INT64_MAX);
	free(lg->graves);
	free(lg->ool);
	free(lg->ool_len);
	rmq_pat_timer_free(lg->tm);
	rmq_pat_mem_free(lg->ring);
	rmq_pat_mem_free(lg->cells);
	free(lg);
	st->log = NULL;
}

