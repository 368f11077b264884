/*
 * The local path's large messages (the rest of the path: local.c): past
 * what the ring takes, an RTS goes through the ring and the receiver
 * copies the payload straight out of the sender's memory, one copy
 * (process_vm_readv), or by fi_read where the kernel refuses.  Where the
 * sender waits in its send, both copy at once: it writes the second half
 * into the receiver's buffer (HELP, HELPED; process_vm_writev) while the
 * receiver reads the first, if that measured faster.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "conn/peer.h"
#include "ctx.h"
#include "link/local_peer.h"
#include "paths/path.h"
#include "paths/rndv.h"
#include "paths/tx.h"
#include "progress.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"
#include "wire.h"

/* ---- large messages: one copy, out of the sender's memory ---- */

/*
 * len bytes between our mine and pid's theirs, by process_vm_readv (into
 * ours) or process_vm_writev (into its), however many calls the kernel
 * takes; *done: the bytes moved.  0, or the errno of the call that
 * stopped (EFAULT where it moved nothing).
 */
static int
vm_copy(pid_t pid, uint8_t *mine, uint64_t theirs, size_t len, bool write,
        size_t *done)
{
	struct iovec l, r;
	ssize_t      got;

	for (*done = 0; *done < len;) {
		l.iov_base = mine + *done;
		l.iov_len  = len - *done;
		r.iov_base = (void *) (uintptr_t) (theirs + *done);
		r.iov_len  = l.iov_len;
		got        = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
		                   : process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (got > 0)
			*done += (size_t) got;
		else if (got == 0)
			return EFAULT;
		else if (errno != EINTR)
			return errno;
	}
	return 0;
}

/*
 * Bytes [from, to) of an RTS's payload straight from the sender's address
 * space into dst + from (process_vm_readv: the kernel copies once, page
 * by page).  The address is the sender's word, but it can only make us
 * read its own memory, and at most the bytes we asked for.  Returns 0, a
 * negative error, or 1 where the kernel refuses (another user's rules,
 * Yama's ptrace scope, seccomp): the key in the same RTS then serves an
 * fi_read over the provider, for this message and the peer's next ones.
 */
static int
cma_read(struct rmq_socket *s, struct local_peer *lp, const struct rmq_rts *rts,
         uint8_t *dst, size_t from, size_t to)
{
	struct rmq_peer *p = lp->p;
	size_t           done;
	int              err;

	err = vm_copy(lp->pid, dst + from, rts->raddr + from, to - from, false,
	              &done);
	if (err == 0)
		return 0;
	if (err == ESRCH)
		return -RMQ_ECONNRESET; /* it is gone */
	if (err == EFAULT) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "%s: its large message is not in its "
		        "memory (%zu of %llu bytes read)", p->name, from + done,
		        (unsigned long long) rts->len);
		return -RMQ_EPROTO;
	}
	rmq_log(rmq_local_miss_level(s), "%s: cannot read its memory (%s): "
	        "its large messages come by fi_read", p->name, strerror(err));
	lp->cma_off = true;
	return 1;
}

/*
 * Where the sender waits in its send (RMQ_RTS_F_SHARE), both copy: it
 * writes the second part into our buffer (process_vm_writev) while we
 * read the first, two cores at once -- well past a bare process_vm_readv
 * at 1 MiB, where one copy stays just below it (docs/INTERNALS.md §4,
 * local, and §17, "the local path").  The split: the
 * offset of the page of dst nearest the middle; the whole length where
 * there is none.
 */
static size_t
split_at(const struct rmq_socket *s, const struct local_peer *lp,
         const struct rmq_rts *rts, const uint8_t *dst)
{
	size_t    min = s->ctx->cfg.local_split_min;
	uintptr_t mid;
	size_t    cut;

	if (!(rts->flags & RMQ_RTS_F_SHARE) || !lp->share || lp->share_off ||
	    min == 0 || rts->len < min || lp->help_state != LOCAL_HELP_NONE)
		return rts->len;
	mid = ((uintptr_t) dst + rts->len / 2) & ~(uintptr_t) 4095;
	cut = mid > (uintptr_t) dst ? (size_t) (mid - (uintptr_t) dst) : 0;
	return cut == 0 || cut >= rts->len ? rts->len : cut;
}

/*
 * Split or whole, for a message that could split: whichever copied faster
 * so far, and the other every RMQ_SPLIT_PROBE-th time, since the host can
 * change under us (a bare read's rate moved from one hour to the next
 * here; on one shared core the split is slower: INTERNALS §4, local, and
 * §17).  The first goes split and teaches nothing (its buffers may be
 * cold), the second split, the third whole.
 */
#define RMQ_SPLIT_PROBE 32

static bool
split_pick(struct local_peer *lp)
{
	bool best;

	lp->big_n++;
	if (lp->big_n <= 2)
		return true;
	if (lp->big_n == 3)
		return false;
	best = lp->rate[1] >= lp->rate[0];
	return local_rate_pick(best, lp->big_n, RMQ_SPLIT_PROBE);
}

static void
split_learn(struct local_peer *lp, bool split, size_t len, int64_t ns)
{
	if (lp->big_n < 2)
		return;
	local_rate_add(&lp->rate[split ? 1 : 0], len, ns);
}

/* HELP: the sender writes bytes [cut, len) of its payload to dst + cut. */
static int
help_ask(struct rmq_socket *s, struct local_peer *lp, const struct rmq_rts *rts,
         uint8_t *dst, size_t cut)
{
	struct rmq_peer  *p = lp->p;
	uint8_t           b[RMQ_RTS_SIZE];
	struct rmq_hdr    h;
	struct rmq_rts    ask = {
		.len    = rts->len - cut,
		.raddr  = (uint64_t) (uintptr_t) (dst + cut),
		.rkey   = cut,
		.cookie = rts->cookie,
	};
	struct rmq_waiter w;
	int               rc;

	rmq_hdr_fill(&h, p, RMQ_MT_HELP, rts->cookie, 0);
	rmq_hdr_encode(b, &h);
	rmq_rts_encode(b + RMQ_HDR_SIZE, &ask);
	lp->help_state  = LOCAL_HELP_ASKED;
	lp->help_cookie = rts->cookie;
	rmq_waiter_init(&w, 1000);
	rc = rmq_tx_small(s, p, &w, b, sizeof(b));
	if (rc != 0) {
		p->owed       += h.credits;
		lp->help_state = LOCAL_HELP_NONE;
	}
	return rc;
}

/* A peer that died (or that we dropped) while writing into our buffer:
 * its write may still be under way in a process not yet gone; this long
 * before the buffer goes back to the application. */
#define RMQ_HELP_GRACE_NS (50 * 1000 * 1000)

struct help_wait {
	struct rmq_peer   *p;
	struct local_peer *lp;
	int64_t            dead_since;
};

static int
help_came(void *arg)
{
	struct help_wait *hw = arg;

	if (hw->lp->help_state == LOCAL_HELP_DONE)
		return 1;
	if (hw->p->state != RMQ_PEER_DEAD)
		return 0;
	if (hw->dead_since == 0)
		hw->dead_since = rmq_now_ns();
	else if (rmq_now_ns() - hw->dead_since > RMQ_HELP_GRACE_NS)
		return -RMQ_ECONNRESET;
	return 0;
}

/* Until its HELPED: 0 (written), a positive errno (it could not: the
 * rest is ours to read) or a negative error (it is gone). */
static int
help_wait(struct rmq_socket *s, struct local_peer *lp)
{
	struct help_wait  hw = {lp->p, lp, 0};
	struct rmq_waiter w;
	int               rc;

	rmq_waiter_init(&w, -1);
	rc = rmq_wait_until(&s->reactor, &w, 0, help_came, &hw);
	if (rc == 0 && lp->help_state == LOCAL_HELP_DONE)
		rc = lp->help_status;
	else if (rc == 0)
		rc = -RMQ_ECONNRESET;
	lp->help_state = LOCAL_HELP_NONE;
	if (rc > 0 && !lp->share_off) {
		rmq_log(rmq_local_miss_level(s), "%s: cannot write into our "
		        "memory (%s): we read its large messages whole",
		        lp->p->name, strerror(rc));
		lp->share_off = true;
	}
	return rc;
}

/*
 * An RTS's payload into dst: read from the sender's memory, in two parts
 * copied at once where it helps (split_at), by fi_read where the kernel
 * refuses.  Whatever happens, a HELP asked is waited for before dst goes
 * back to the application.
 */
static int
cma_move(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rts *rts,
         void *dst, bool *told)
{
	struct local_peer *lp = local_of(p);
	size_t             cut;
	int64_t            t0 = 0;
	bool               could;
	int                rc, hrc = 0;

	*told = false;
	if (lp == NULL || lp->known <= 0 || lp->cma_off)
		return rmq_rndv_read_move(s, p, rts, dst, told);
	cut   = split_at(s, lp, rts, dst);
	could = cut < rts->len;
	if (could) {
		t0 = rmq_now_ns();
		if (!split_pick(lp))
			cut = rts->len;
	}
	if (cut < rts->len && help_ask(s, lp, rts, dst, cut) != 0)
		cut = rts->len;
	rc = cma_read(s, lp, rts, dst, 0, cut);
	if (cut < rts->len) {
		hrc = help_wait(s, lp);
		if (hrc > 0 && rc == 0)
			rc = cma_read(s, lp, rts, dst, cut, rts->len);
		else if (hrc < 0 && rc == 0)
			rc = hrc;
		else if (hrc == 0 && rc == 0)
			s->stats.split_copies++;
		if (hrc == 0) /* its stores, which memcheck never saw */
			RMQ_MEM_WRITTEN((uint8_t *) dst + cut, rts->len - cut);
	}
	if (could && rc == 0 && hrc == 0)
		split_learn(lp, cut < rts->len, rts->len, rmq_now_ns() - t0);
	if (rc == 0) /* whole or in two parts: not through the ring */
		s->stats.direct_copies++;
	if (rc == 1)
		return rmq_rndv_read_move(s, p, rts, dst, told);
	return rc;
}

/* ---- helping: the sending side of a split copy ---- */

/* HELP: write the part asked of the send it names, then say HELPED. */
static void
help_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx)
{
	struct local_peer  *lp = local_of(p);
	struct rmq_rndv_tx *r  = rmq_rndv_find(s, p, rx->h->msgid,
	                                       RMQ_PATH_LOCAL);
	struct rmq_rts      ask;
	size_t              done;
	int                 err;

	if (rmq_rts_decode(&ask, rx->ext) != 0 || ask.cookie != rx->h->msgid ||
	    ask.flags != 0) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "bad HELP from %s", p->name);
		err = EPROTO;
	} else if (r == NULL || lp == NULL || lp->known <= 0) {
		rmq_log(RMQ_LOG_DEBUG, "HELP from %s for no send of ours (%u)",
		        p->name, rx->h->msgid);
		err = ENOENT;
	} else if (ask.len == 0 || ask.rkey > r->len ||
	           ask.len > r->len - ask.rkey) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "%s asked for bytes %llu+%llu of a "
		        "%zu-byte message", p->name,
		        (unsigned long long) ask.rkey,
		        (unsigned long long) ask.len, r->len);
		err = EPROTO;
	} else {
		/* Our own payload, read only: vm_copy writes from it. */
		err = vm_copy(lp->pid, (uint8_t *) (uintptr_t) r->src + ask.rkey,
		              ask.raddr, (size_t) ask.len, true, &done);
	}
	(void) rmq_tx_ctl(s, p, RMQ_MT_HELPED, rx->h->msgid, (uint32_t) err);
}

/* HELPED: the part we asked for is written (or why not). */
static void
helped_rx(struct rmq_socket *s, struct rmq_peer *p, const struct rmq_rx *rx)
{
	struct local_peer *lp = local_of(p);

	if (lp == NULL || lp->help_state != LOCAL_HELP_ASKED ||
	    rx->h->msgid != lp->help_cookie) {
		s->stats.proto_errors++;
		rmq_log(RMQ_LOG_WARN, "HELPED from %s that we did not ask "
		        "for (%u)", p->name, rx->h->msgid);
		return;
	}
	lp->help_status = rx->h->len < 4096 ? (int) rx->h->len : EPROTO;
	lp->help_state  = LOCAL_HELP_DONE;
}

void
rmq_local_on_rx(struct rmq_socket *s, struct rmq_peer *p,
                const struct rmq_rx *rx)
{
	if ((rx->h->type & RMQ_MT_MASK) == RMQ_MT_HELP)
		help_rx(s, p, rx);
	else
		helped_rx(s, p, rx);
}

int
rmq_local_fetch(struct rmq_socket *s, struct rmq_rxent *e, void *dst, size_t n)
{
	return rmq_rndv_fetch(s, e, dst, n, cma_move, false);
}
