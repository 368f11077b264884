/*
 * Memory a peer was granted, and nothing more.  An attacker completes real
 * handshakes with a victim PAIR socket, then posts its own RMA through its
 * endpoint (this test links the engine's internals): writes past the end
 * of the victim's ring, across its start and its end, into a canary page
 * of the victim's, with a wrong key, with the key of a ring whose peer has
 * gone, and, once a rendezvous is over (FIN), a read and a write with the
 * key of that rendezvous buffer.  Each must fail at the attacker (an error
 * completion, or the provider dropping the connection; tcp;ofi_rxm says
 * -FI_ECANCELED, sockets -FI_EACCES), and the victim
 * checks that no byte of its ring, of the page before and after it, of its
 * canary page or of its rendezvous buffer changed.  tcp and sockets:
 * libfabric 1.17's shm does not check keys (rmq(7), SECURITY).
 */
#include <rdma/fi_rma.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "checkmain.h"
#include "conn/peer.h"
#include "ep.h"
#include "paths/ring.h"
#include "progress.h"
#include "rxq.h"
#include "socket.h"
#include "testutil.h"
#include "util.h"

#define PAGE      4096
#define BIG       (1u << 20) /* a rendezvous message */
#define N_ATTACKS 7
#define ATTACK_BYTE 0xee /* what the attacker writes */

enum attack {
	A_PAST_END = 0, /* 64 bytes just after the ring */
	A_END,          /* 64 bytes across its end */
	A_START,        /* 64 bytes across its start */
	A_CANARY,       /* 64 bytes on the victim's canary page */
	A_WRONG_KEY,    /* the ring's first bytes, another key */
	A_STALE_KEY,    /* the last connection's ring and key */
	A_AFTER_FIN,    /* a rendezvous buffer's key, after its FIN */
};

static const char *const names[N_ATTACKS] = {
	"past the end", "across the end", "across the start", "canary page",
	"wrong key", "stale key", "after FIN",
};

/* What the victim tells the attacker (a pipe, raw). */
struct grant {
	int64_t canary_off; /* canary page - ring start */
};

/* Copy len bytes at addr of our own memory; false if not all mapped. */
static bool
peek(const void *addr, void *out, size_t len)
{
	struct iovec l = {out, len}, r = {(void *) addr, len};

	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t) len;
}

/* The memory the victim watches, with what it held. */
struct watch {
	const uint8_t *at[4];
	size_t         len[4];
	uint8_t       *was[4];
	bool           mapped[4];
	bool           foreign[4]; /* not ours: others may change it */
	int            n;
};

static void
watch_add(struct watch *w, const void *at, size_t len, bool foreign)
{
	int i = w->n++;

	w->foreign[i] = foreign;
	w->at[i]     = at;
	w->len[i]    = len;
	w->was[i]    = malloc(len);
	w->mapped[i] = peek(at, w->was[i], len);
}


static void
watch_reset(struct watch *w)
{
	while (w->n > 0)
		free(w->was[--w->n]);
}

/*
 * Did the attacker's bytes land?  Memory of ours must not change at all;
 * a neighbour that is not ours (the heap next to the ring) may change by
 * others' hands, so there we look for the attacker's bytes: a run of 8 or
 * more that changed to ATTACK_BYTE.
 */
static bool
landed(const struct watch *w, int i, const uint8_t *now, size_t *at)
{
	size_t k, run = 0;

	for (k = 0; k < w->len[i]; k++) {
		if (!w->foreign[i] && now[k] != w->was[i][k]) {
			*at = k;
			return true;
		}
		run = now[k] != w->was[i][k] && now[k] == ATTACK_BYTE ? run + 1
		                                                     : 0;
		if (run >= 8) {
			*at = k + 1 - run;
			return true;
		}
	}
	return false;
}

/* 0, or how many regions changed (each reported). */
static int
watch_check(struct watch *w, const char *what)
{
	uint8_t *now;
	size_t   at = 0;
	int      i, bad = 0;

	for (i = 0; i < w->n; i++) {
		if (w->mapped[i]) {
			now = malloc(w->len[i]);
			/* A neighbour may be unmapped by its owner since:
			 * no write of the attacker's did that. */
			if ((!peek(w->at[i], now, w->len[i]) &&
			     !w->foreign[i]) ||
			    landed(w, i, now, &at)) {
				fprintf(stderr, "victim: %s: region %d (%zu "
				        "bytes at %p) changed at +%zu: %02x, "
				        "was %02x\n", what, i, w->len[i],
				        (void *) w->at[i], at, now[at],
				        w->was[i][at]);
				bad++;
			}
			free(now);
		}
	}
	watch_reset(w);
	return bad;
}

/* The victim's one live peer, held; NULL if none. */
static struct rmq_peer *
live_peer(struct rmq_socket *s)
{
	struct rmq_peer *p;
	int              i;

	for (i = 0; i < s->peers->cap; i++) {
		p = rmq_peer_at(s, i);
		if (p != NULL && p->state == RMQ_PEER_LIVE) {
			rmq_peer_hold(p);
			return p;
		}
	}
	return NULL;
}

/* Progress for ms: the provider only lands (or refuses) RMA on tcp while
 * the target progresses. */
static void
drive(struct rmq_socket *s, int ms)
{
	double end = test_now() + ms / 1e3;

	while (test_now() < end)
		rmq_reactor_progress(&s->reactor);
}

struct victim_arg {
	int to_attacker, from_attacker;
};

static int
victim(rmq_socket *s, void *arg)
{
	struct victim_arg *va = arg;
	struct watch       w = {0};
	struct rmq_peer   *p;
	struct rmq_numa_mem mem;
	struct grant       g;
	uint8_t           *canary, *big;
	char               buf[16];
	void              *ring;
	size_t             rlen;
	int                a, v, fails = 0, path = RMQ_PATH_RNDV_READ;

	canary = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
	              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	big    = malloc(BIG);
	if (canary == MAP_FAILED || big == NULL)
		return 90;
	memset(canary, 0xcc, PAGE);
	test_fill(big, BIG, 7);
	rmq_setopt(s, RMQ_RNDV_PATH, &path, sizeof(path));
	for (a = 0; a < N_ATTACKS; a++) {
		/* A new attacker connection says hello. */
		if (rmq_recv(s, buf, sizeof(buf), 0) != 2)
			return 91;
		p = live_peer(s);
		if (p == NULL || !rmq_ring_rx_area(p, &ring, &rlen, &mem))
			return 92;
		watch_add(&w, ring, rlen, false);
		/* What a write across either end would touch. */
		watch_add(&w, (uint8_t *) ring - 64, 64, true);
		watch_add(&w, (uint8_t *) ring + rlen, 64, true);
		watch_add(&w, canary, PAGE, false);
		g.canary_off = (int64_t) ((intptr_t) canary - (intptr_t) ring);
		if (write(va->to_attacker, &g, sizeof(g)) != sizeof(g))
			return 93;
		if (a == A_AFTER_FIN) {
			/* The rendezvous, its FIN, then the attack on its
			 * buffer (watched in place of the ring's page). */
			if (rmq_send(s, big, BIG, 0) != BIG ||
			    rmq_recv(s, buf, sizeof(buf), 0) != 4)
				return 94;
			watch_reset(&w);
			watch_add(&w, ring, rlen, false);
			watch_add(&w, big, BIG, false);
			watch_add(&w, canary, PAGE, false);
			if (rmq_send(s, "fin", 3, 0) != 3)
				return 95;
		}
		/* The attack; then the provider gets time to land it. */
		if (pipe_get(va->from_attacker, &v, 30000) != 0)
			return 96;
		drive(s, 400);
		fails += watch_check(&w, names[a]);
		if (a == A_AFTER_FIN && test_check(big, BIG, 7) != BIG)
			fails++;
		rmq_peer_release(s, p);
		pipe_put(va->to_attacker, fails);
		/* The attacker goes, its peer with it: then the next (a PAIR
		 * takes one peer at a time). */
		while (s->peers->nlive > 0)
			drive(s, 10);
		pipe_put(va->to_attacker, 0);
	}
	free(big);
	munmap(canary, PAGE);
	return fails;
}

/* One attacker RMA and how it ended. */
struct attack_op {
	struct rmq_op  op;
	bool           done;
	int            err;
	struct fid_mr *mr;
	uint8_t       *b;
	bool           read;
	const char    *what;
};

static void
attack_done(struct rmq_op *op, const struct rmq_cqe *e, void *owner)
{
	struct attack_op *a = rmq_container_of(op, struct attack_op, op);

	RMQ_UNUSED(owner);
	a->done = true;
	a->err  = e->err;
}

/*
 * Post a write (or read) of 64 bytes at raddr with key to p.  The write asks for delivery completion: on
 * tcp;ofi_rxm a write the target refuses is otherwise reported done to
 * its sender (measured, libfabric 1.17: the target drops it, no byte
 * changes), and with it the sender learns (-FI_ECANCELED).
 */
static struct attack_op *
post(struct rmq_socket *s, struct rmq_peer *p, uint64_t raddr, uint64_t key,
     bool read, const char *what)
{
	struct attack_op *a = calloc(1, sizeof(*a));
	void             *desc;
	double            end = test_now() + 2.0;
	struct iovec      iov;
	struct fi_rma_iov rma;
	struct fi_msg_rma msg;
	ssize_t           rc;

	a->b    = calloc(1, PAGE);
	a->read = read;
	a->what = what;
	ck_assert_int_eq(rmq_mr_reg(s, a->b, PAGE, read ? FI_READ : FI_WRITE,
	                            &a->mr, &desc, NULL), 0);
	if (!read)
		memset(a->b, ATTACK_BYTE, 64);
	rmq_op_init(&a->op, attack_done, 0);
	iov  = (struct iovec){a->b, 64};
	rma  = (struct fi_rma_iov){raddr, 64, key};
	msg  = (struct fi_msg_rma){.msg_iov = &iov, .desc = &desc,
	                           .iov_count = 1, .addr = p->fiaddr,
	                           .rma_iov = &rma, .rma_iov_count = 1,
	                           .context = &a->op.fctx};
	do {
		rc = read ? fi_read(s->ep, a->b, 64, desc, p->fiaddr, raddr,
		                    key, &a->op.fctx)
		          : fi_writemsg(s->ep, &msg, FI_COMPLETION |
		                                     FI_DELIVERY_COMPLETE);
		if (rc == -FI_EAGAIN)
			rmq_reactor_progress(&s->reactor);
	} while (rc == -FI_EAGAIN && test_now() < end);
	if (rc != 0) { /* refused at once */
		a->done = true;
		a->err  = (int) rc;
	}
	return a;
}

/*
 * After the victim has had time to take it (on tcp the target must
 * progress): did it fail?  An error completion, or the connection dropped
 * (tcp;ofi_rxm ends a connection that breaks the target's rules).  A read
 * must bring nothing back.
 */
static bool
failed(struct rmq_peer *p, struct attack_op *a)
{
	bool   fail = (a->done && a->err != 0) || p->state != RMQ_PEER_LIVE;
	size_t i;

	fprintf(stderr, "attacker: %s: %s%s%s\n", a->what,
	        !a->done ? "no completion"
	                 : a->err != 0 ? "error " : "completed",
	        a->done && a->err != 0 ? fi_strerror(-a->err) : "",
	        p->state != RMQ_PEER_LIVE ? "; connection dropped" : "");
	for (i = 0; a->read && i < 64; i++)
		ck_assert_msg(a->b[i] == 0, "%s: the read brought back data",
		              a->what);
	if (a->done) { /* else the provider may still use b */
		fi_close(&a->mr->fid);
		free(a->b);
	}
	free(a);
	return fail;
}

static void
guard(const char *prov)
{
	struct victim_arg va;
	struct grant      g;
	rmq_ctx          *ctx;
	rmq_socket       *s;
	struct rmq_peer  *p;
	struct rmq_rxent *e;
	uint64_t          raddr, rkey, old_raddr = 0, old_rkey = 0;
	size_t            rlen;
	char              bep[64], ep[256], buf[16];
	int               to_a[2], from_a[2], a, v;
	uint8_t          *big = malloc(BIG);
	struct attack_op *op[2];
	double            end;
	pid_t             pid;
	bool              ok;

	ck_assert_int_eq(pipe(to_a), 0);
	ck_assert_int_eq(pipe(from_a), 0);
	va  = (struct victim_arg){to_a[1], from_a[0]};
	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)), victim,
	                   &va, ep, sizeof(ep));
	for (a = 0; a < N_ATTACKS; a++) {
		open_connected(RMQ_PAIR, ep, &ctx, &s);
		ck_assert_int_eq(rmq_send(s, "hi", 2, 0), 2);
		ck_assert_int_eq(read(to_a[0], &g, sizeof(g)), sizeof(g));
		p = rmq_peer_at(s, 0);
		ck_assert_ptr_nonnull(p);
		ck_assert(rmq_ring_tx_area(p, &raddr, &rkey, &rlen));
		op[1] = NULL;
		switch (a) {
		case A_PAST_END:
			op[0] = post(s, p, raddr + rlen, rkey, false, names[a]);
			break;
		case A_END:
			op[0] = post(s, p, raddr + rlen - 32, rkey, false,
			             names[a]);
			break;
		case A_START:
			op[0] = post(s, p, raddr - 32, rkey, false, names[a]);
			break;
		case A_CANARY:
			op[0] = post(s, p, raddr + (uint64_t) g.canary_off, rkey,
			             false, names[a]);
			break;
		case A_WRONG_KEY:
			op[0] = post(s, p, raddr, rkey ^ 0x5a5a5a5a5a5a5a5aull,
			             false, names[a]);
			break;
		case A_STALE_KEY:
			op[0] = post(s, p, old_raddr, old_rkey, false, names[a]);
			break;
		default: /* A_AFTER_FIN */
			while (p->q.head == NULL)
				rmq_reactor_progress(&s->reactor);
			e = p->q.head; /* the RTS: where and with what key */
			raddr = e->rts.raddr;
			rkey  = e->rts.rkey;
			ck_assert_uint_eq(e->rts.len, BIG);
			ck_assert_int_eq(rmq_recv(s, big, BIG, 0), BIG);
			ck_assert_uint_eq(test_check(big, BIG, 7), BIG);
			ck_assert_int_eq(rmq_send(s, "done", 4, 0), 4);
			/* The victim has our FIN once it answers. */
			ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 3);
			op[0] = post(s, p, raddr, rkey, true, "read after FIN");
			op[1] = post(s, p, raddr, rkey, false, names[a]);
			break;
		}
		/* The victim takes it (or not) while we wait to see: the
		 * completions, then a little more for a dropped connection. */
		pipe_put(from_a[1], 1);
		end = test_now() + 3.0;
		while ((!op[0]->done || (op[1] != NULL && !op[1]->done)) &&
		       test_now() < end)
			rmq_reactor_progress(&s->reactor);
		end = test_now() + 0.2;
		while (test_now() < end)
			rmq_reactor_progress(&s->reactor);
		ok = failed(p, op[0]);
		if (op[1] != NULL)
			ok = failed(p, op[1]) && ok;
		ck_assert_msg(ok, "%s: %s: the attacker's RMA did not fail",
		              prov, names[a]);
		ck_assert_int_eq(pipe_get(to_a[0], &v, 30000), 0);
		ck_assert_msg(v == 0, "%s: %s: the victim's memory changed",
		              prov, names[a]);
		old_raddr = raddr;
		old_rkey  = rkey;
		rmq_close(s);
		rmq_ctx_destroy(ctx);
		ck_assert_int_eq(pipe_get(to_a[0], &v, 30000), 0);
	}
	ck_assert_int_eq(reap(pid), 0);
	free(big);
}

START_TEST(test_guard_tcp)
{
	guard("tcp");
}
END_TEST

START_TEST(test_guard_sockets)
{
	guard("sockets");
}
END_TEST

static Suite *
guard_suite(void)
{
	Suite *s  = suite_create("guard");
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_guard_tcp);
	tcase_add_test(tc, test_guard_sockets);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(guard_suite)
