/*
 * Every path, forced, on every provider here: sizes at and around each
 * path's limits, 0 B to 64 MiB, every byte checked both ways, and
 * rmq_stats proves on both sides that the forced path carried each message.
 * A size a forced path cannot carry fails with -RMQ_EMSGSIZE and the socket
 * goes on working.  Then the ring under pressure: a receiver that stops
 * reading exhausts its credits (-RMQ_EAGAIN with RMQ_DONTWAIT, a blocked
 * send that times out) and nothing already written is overwritten; and a
 * long stream of small messages arrives complete and in order.
 *
 * The whole file also runs with RMQ_STRICT=1 (meson test suite "strict").
 */
#include <sys/mman.h>

#include "testutil.h"
#include "checkmain.h"

#define BIG (64u * MiB)
#define END "__END__"

static const char *const provs[] = {"shm", "tcp", "sockets"};
static const int paths[] = {
	RMQ_PATH_INJECT,     RMQ_PATH_EAGER,      RMQ_PATH_RING,
	RMQ_PATH_RNDV_READ,  RMQ_PATH_RNDV_WRITE, RMQ_PATH_RNDV_SEND,
	RMQ_PATH_SEG,
};
#define NPATHS (sizeof(paths) / sizeof(paths[0]))

static int
force(rmq_socket *s, int path)
{
	return rmq_setopt(s, RMQ_PATH, &path, sizeof(path));
}

/* Whether s runs in strict mode, as the library decided it. */
static bool
is_strict(rmq_socket *s)
{
	size_t l      = sizeof(int);
	int    strict = -1;

	ck_assert_int_eq(rmq_getopt(s, RMQ_STRICT, &strict, &l), 0);
	return strict != 0;
}

/* Echo: every message must come by the forced path; answer in kind. */
static int
serve_forced(rmq_socket *s, void *arg)
{
	struct rmq_stats a, b;
	uint8_t         *buf = malloc(BIG + 16);
	int              path = *(int *) arg, fails = 0, rc;
	ssize_t          n;
	size_t           at;

	if (buf == NULL)
		return 50;
	rc = force(s, path);
	if (rc != 0) {
		fprintf(stderr, "echo: cannot force %s: %s\n",
		        rmq_path_name(path), rmq_strerror(rc));
		return 51;
	}
	for (;;) {
		rmq_stats(s, &a);
		n = rmq_recv(s, buf, BIG + 16, 0);
		if (n < 0) {
			fprintf(stderr, "echo recv: %s\n", rmq_strerror((int) n));
			fails++;
			break;
		}
		rmq_stats(s, &b);
		if (n == (ssize_t) strlen(END) &&
		    memcmp(buf, END, (size_t) n) == 0) {
			/*
			 * Say we are done: the peer must not leave while our
			 * last send still waits for its completion (sockets
			 * reports it tens of ms after the data landed).  By
			 * inject, which waits for nothing: the same race would
			 * otherwise hit this last message.
			 */
			path = -1;
			if (force(s, path) != 0 || rmq_send(s, "ok", 2, 0) != 2)
				fails++;
			break;
		}
		if (b.recv_msgs[path] != a.recv_msgs[path] + 1) {
			fprintf(stderr, "echo: %zd B did not come by %s\n", n,
			        rmq_path_name(path));
			fails++;
		}
		at = test_check(buf, (size_t) n, (uint64_t) n);
		if (at != (size_t) n) {
			fprintf(stderr, "echo: %zd B: byte %zu wrong\n", n, at);
			fails++;
		}
		test_fill(buf, (size_t) n, (uint64_t) n + 7);
		n = rmq_send(s, buf, (size_t) n, 0);
		if (n < 0) {
			fprintf(stderr, "echo send: %s\n", rmq_strerror((int) n));
			fails++;
			break;
		}
	}
	free(buf);
	return fails;
}

/* Sizes to try for a path, and the first size it must refuse (0: none). */
static size_t
sizes_for(rmq_socket *s, int path, size_t *sz, size_t *too_big)
{
	size_t inj = 0, eag = 0, len = sizeof(size_t), n = 0;

	rmq_getopt(s, RMQ_INJECT_MAX, &inj, &len);
	len = sizeof(size_t);
	rmq_getopt(s, RMQ_EAGER_MAX, &eag, &len);
	*too_big = 0;
	sz[n++] = 0;
	sz[n++] = 1;
	switch (path) {
	case RMQ_PATH_INJECT:
		sz[n++] = inj - 1;
		sz[n++] = inj;
		*too_big = 64u << 10; /* above every inject size here */
		break;
	case RMQ_PATH_EAGER:
		/* The peer's slabs take max(its eager_max, 8 KiB) (ep.c). */
		if (eag < 8192)
			eag = 8192;
		sz[n++] = inj + 1;
		sz[n++] = eag - 1;
		sz[n++] = eag;
		*too_big = eag + 1;
		break;
	case RMQ_PATH_RING:
		/* Default ring: 68 slots of 4 KiB, 16-byte header. */
		sz[n++] = 4096 - 16;
		sz[n++] = 4096 - 15; /* two slots */
		sz[n++] = 3 * 4096;
		sz[n++] = 65536;          /* fits since 68 slots */
		sz[n++] = 17 * 4096 - 16; /* a quarter of the ring */
		*too_big = 17 * 4096 - 15;
		break;
	default:
		sz[n++] = inj + 1;
		sz[n++] = eag + 1;
		sz[n++] = 65537;
		sz[n++] = MiB;
		sz[n++] = MiB + 3;
		sz[n++] = BIG;
		break;
	}
	return n;
}

static void
forced_roundtrips(const char *prov, int path, int type)
{
	char             bep[64], ep[256];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats a, b;
	struct rmq_path_stats ps;
	size_t           sz[16], ns, i, at, too_big;
	uint8_t         *sb, *rb;
	const char      *env;
	ssize_t          n;
	pid_t            pid;
	int              rc, peer = type == RMQ_REQ ? RMQ_REP : RMQ_PAIR;

	pid = spawn_server(peer, bind_addr(prov, bep, sizeof(bep)),
	                   serve_forced, (void *) &path, ep, sizeof(ep));
	open_connected(type, ep, &ctx, &s);
	rc = force(s, path);
	ck_assert_msg(rc == 0, "%s: force %s: %s", prov, rmq_path_name(path),
	              rmq_strerror(rc));
	ns = sizes_for(s, path, sz, &too_big);
	/* The strict suite really runs strict. */
	env = getenv("RMQ_STRICT");
	ck_assert_int_eq(is_strict(s), env != NULL && strcmp(env, "1") == 0);
	sb = malloc(BIG);
	rb = malloc(BIG + 1);
	ck_assert_ptr_nonnull(sb);
	ck_assert_ptr_nonnull(rb);
	for (i = 0; i < ns; i++) {
		test_fill(sb, sz[i], sz[i]);
		rmq_stats(s, &a);
		n = rmq_send(s, sb, sz[i], 0);
		ck_assert_msg(n == (ssize_t) sz[i], "%s %s: send %zu: %s", prov,
		              rmq_path_name(path), sz[i],
		              rmq_strerror((int) n));
		rmq_stats(s, &b);
		ck_assert_msg(b.sent_msgs[path] == a.sent_msgs[path] + 1,
		              "%s: %zu B did not go %s", prov, sz[i],
		              rmq_path_name(path));
		memset(rb, 0xee, sz[i] + 1);
		n = rmq_recv(s, rb, BIG + 1, 0);
		ck_assert_msg(n == (ssize_t) sz[i], "%s %s: recv %zu: %zd %s",
		              prov, rmq_path_name(path), sz[i], n,
		              rmq_strerror((int) n));
		rmq_stats(s, &a);
		ck_assert_msg(a.recv_msgs[path] == b.recv_msgs[path] + 1,
		              "%s: echo of %zu B did not come %s", prov, sz[i],
		              rmq_path_name(path));
		at = test_check(rb, sz[i], sz[i] + 7);
		ck_assert_msg(at == sz[i], "%s %s: echo of %zu B wrong at %zu",
		              prov, rmq_path_name(path), sz[i], at);
		ck_assert_uint_eq(rb[sz[i]], 0xee); /* nothing past the end */
	}
	/* Every path's counters read one by one are struct rmq_stats'. */
	rmq_stats(s, &a);
	for (i = 0; i < (size_t) rmq_path_count(); i++) {
		ck_assert_int_eq(rmq_path_stats(s, (int) i, &ps), 0);
		ck_assert_int_eq(rmq_path_id(rmq_path_name((int) i)), (int) i);
		if (i >= RMQ_PATH_MAX)
			continue;
		ck_assert_uint_eq(ps.sent_msgs, a.sent_msgs[i]);
		ck_assert_uint_eq(ps.sent_bytes, a.sent_bytes[i]);
		ck_assert_uint_eq(ps.recv_msgs, a.recv_msgs[i]);
		ck_assert_uint_eq(ps.recv_bytes, a.recv_bytes[i]);
	}
	ck_assert_uint_ge(a.sent_msgs[path], ns);
	ck_assert_int_eq(rmq_path_stats(s, rmq_path_count(), &ps),
	                 -RMQ_EINVAL);
	ck_assert_int_eq(rmq_path_stats(s, -1, &ps), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_path_stats(s, path, NULL), -RMQ_EINVAL);
	if (too_big != 0) {
		n = rmq_send(s, sb, too_big, 0);
		ck_assert_msg(n == -RMQ_EMSGSIZE,
		              "%s %s: %zu B gave %zd, want EMSGSIZE", prov,
		              rmq_path_name(path), too_big, n);
	}
	n = rmq_send(s, END, strlen(END), 0);
	ck_assert_int_eq(n, (ssize_t) strlen(END));
	ck_assert_int_eq(rmq_recv(s, rb, BIG, 0), 2);
	close_all(ctx, s);
	free(sb);
	free(rb);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_forced_pair)
{
	forced_roundtrips(provs[_i / NPATHS], paths[_i % NPATHS], RMQ_PAIR);
}
END_TEST

/* REQ/REP over the one-sided paths and seg on shm and tcp. */
START_TEST(test_forced_reqrep)
{
	static const int p[] = {RMQ_PATH_RING, RMQ_PATH_RNDV_WRITE,
	                        RMQ_PATH_SEG};

	forced_roundtrips(provs[_i / 3], p[_i % 3], RMQ_REQ);
}
END_TEST

/*
 * User buffers are registered per rendezvous, never cached: send from a
 * mapping, unmap it, map new pages at the same address with other bytes,
 * send again -- the peer must get the new bytes.  (On shm and tcp RMA is
 * emulated and reads the current page anyway; on a NIC a stale cached
 * registration would read the old, pinned pages.  The test holds the
 * contract either way.)
 */
static void
remap_same_address(const char *prov, int path)
{
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	size_t      len = MiB, at;
	uint8_t    *a, *b, *rb = malloc(MiB + 1);
	pid_t       pid;
	int         round;

	ck_assert_ptr_nonnull(rb);
	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_forced, (void *) &path, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(force(s, path), 0);
	a = mmap(NULL, len, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(a != MAP_FAILED);
	for (round = 0; round < 2; round++) {
		/* The server checks bytes seeded with the size: vary it. */
		size_t n = len - (size_t) round;

		test_fill(a, n, n);
		ck_assert_int_eq(rmq_send(s, a, n, 0), (ssize_t) n);
		ck_assert_int_eq(rmq_recv(s, rb, MiB + 1, 0), (ssize_t) n);
		at = test_check(rb, n, n + 7);
		ck_assert_msg(at == n, "%s %s round %d: wrong at %zu", prov,
		              rmq_path_name(path), round, at);
		if (round == 0) {
			ck_assert_int_eq(munmap(a, len), 0);
			b = mmap(a, len, PROT_READ | PROT_WRITE,
			         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			ck_assert(b == a); /* same address, new pages */
		}
	}
	ck_assert_int_eq(rmq_send(s, END, strlen(END), 0), (ssize_t) strlen(END));
	ck_assert_int_eq(rmq_recv(s, rb, MiB, 0), 2);
	close_all(ctx, s);
	munmap(a, len);
	free(rb);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_remap_same_address)
{
	static const int p[] = {RMQ_PATH_RNDV_READ, RMQ_PATH_RNDV_WRITE,
	                        RMQ_PATH_RNDV_SEND};

	remap_same_address(provs[_i / 3], p[_i % 3]);
}
END_TEST

/*
 * By size, with a ring range (RMQ_RING_MAX): each size at and around the
 * thresholds takes the path the table says, and a stream that mixes all
 * the paths back to back arrives in order -- the ring's writes and the
 * sends are ordered by the domain librmq asked for.
 */
static int
expected_bysize(size_t n, size_t inj, size_t eag, size_t ring, int rndv)
{
	if (n <= inj)
		return RMQ_PATH_INJECT;
	if (n <= eag)
		return RMQ_PATH_EAGER;
	if (n <= ring)
		return RMQ_PATH_RING;
	return rndv;
}

static void
table_of(rmq_socket *s, size_t *inj, size_t *eag, size_t *ring, int *rndv)
{
	size_t len = sizeof(size_t);

	socket_paths(s, inj, eag, rndv);
	ck_assert_int_eq(rmq_getopt(s, RMQ_RING_MAX, ring, &len), 0);
}

static const size_t mix[] = {16, 5000, 20000, 70000, 100, 9000, 32768};
#define NMIX  (sizeof(mix) / sizeof(mix[0]))
#define NSEQ  700

static int
serve_mixed(rmq_socket *s, void *arg)
{
	uint8_t         *buf = malloc(MiB + 1);
	struct rmq_stats a, b;
	size_t           inj = 0, eag = 0, ring = 0, len = sizeof(size_t);
	uint64_t         seq;
	ssize_t          n;
	int              i, rndv = 0, want, fails = 0;

	(void) arg;
	if (buf == NULL)
		return 50;
	for (i = 0; i < NSEQ; i++) {
		rmq_stats(s, &a);
		n = rmq_recv(s, buf, MiB + 1, 0);
		rmq_stats(s, &b);
		if (i == 0) {
			rmq_getopt(s, RMQ_INJECT_MAX, &inj, &len);
			len = sizeof(size_t);
			rmq_getopt(s, RMQ_EAGER_MAX, &eag, &len);
			len = sizeof(size_t);
			rmq_getopt(s, RMQ_RING_MAX, &ring, &len);
			len = sizeof(int);
			rmq_getopt(s, RMQ_RNDV_PATH, &rndv, &len);
			if (ring <= eag) {
				fprintf(stderr, "mixed: no ring range\n");
				fails++;
			}
		}
		if (n != (ssize_t) mix[i % NMIX]) {
			fprintf(stderr, "mixed: message %d is %zd B\n", i, n);
			fails++;
			break;
		}
		memcpy(&seq, buf, sizeof(seq));
		if (seq != (uint64_t) i ||
		    test_check(buf + 8, (size_t) n - 8, seq) != (size_t) n - 8) {
			fprintf(stderr, "mixed: message %d out of order (%llu)\n",
			        i, (unsigned long long) seq);
			fails++;
			break;
		}
		want = expected_bysize((size_t) n, inj, eag, ring, rndv);
		if (b.recv_msgs[want] != a.recv_msgs[want] + 1) {
			fprintf(stderr, "mixed: %zd B not by %s\n", n,
			        rmq_path_name(want));
			fails++;
		}
	}
	free(buf);
	return fails + (rmq_send(s, "ok", 2, 0) != 2);
}

static void
ring_by_size(const char *prov)
{
	char             bep[64], ep[256], ok[4];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats a, b;
	size_t           inj, eag, ring;
	uint8_t         *m = malloc(MiB);
	uint64_t         seq;
	int              i, rndv, want;
	pid_t            pid;

	ck_assert_ptr_nonnull(m);
	/* Both processes: the child inherits it at fork. */
	setenv("RMQ_RING_MAX", "32768", 1);
	setenv("RMQ_EAGER_MAX", "4096", 1); /* sockets' is 64 KiB */
	/* Each message by its own path: none packed with others
	 * (check_coalesce mixes sizes with coalescing on). */
	setenv("RMQ_COALESCE", "0", 1);
	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_mixed, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	table_of(s, &inj, &eag, &ring, &rndv);
	ck_assert_uint_eq(ring, 32768);
	ck_assert_uint_lt(eag, ring);
	for (i = 0; i < NSEQ; i++) {
		size_t n = mix[i % NMIX];

		seq = (uint64_t) i;
		memcpy(m, &seq, sizeof(seq));
		test_fill(m + 8, n - 8, seq);
		rmq_stats(s, &a);
		ck_assert_int_eq(rmq_send(s, m, n, 0), (ssize_t) n);
		rmq_stats(s, &b);
		want = expected_bysize(n, inj, eag, ring, rndv);
		ck_assert_msg(b.sent_msgs[want] == a.sent_msgs[want] + 1,
		              "%s: %zu B not by %s", prov, n,
		              rmq_path_name(want));
	}
	ck_assert_int_eq(rmq_recv(s, ok, sizeof(ok), 0), 2);
	close_all(ctx, s);
	free(m);
	ck_assert_int_eq(reap(pid), 0);
	/* Without a fork per test (CK_FORK=no, as the valgrind setup runs
	 * them) the tests after this one would inherit a 32 KiB ring: a
	 * 64 KiB reply to a stopped peer then went by rendezvous and waited
	 * for it for ever (test_in_place_stopped_peer). */
	unsetenv("RMQ_RING_MAX");
	unsetenv("RMQ_EAGER_MAX");
	unsetenv("RMQ_COALESCE");
}

START_TEST(test_ring_by_size)
{
	ring_by_size(provs[_i]);
}
END_TEST

/* ---- the ring under pressure ---- */

struct stall {
	int    go;   /* pipe: how many messages to read, when to start */
	size_t size;
};

static int
serve_stalled(rmq_socket *s, void *arg)
{
	struct stall    *st = arg;
	struct rmq_stats a;
	uint8_t         *buf = malloc(st->size + 1);
	int              i, count, fails = 0, path = RMQ_PATH_RING;
	ssize_t          n;

	if (buf == NULL || force(s, path) != 0)
		return 50;
	/* One message: the peer is connected (the handshake needs us). */
	if (rmq_recv(s, buf, st->size, 0) != 2)
		return 52;
	/* Then not a single receive until told: the ring fills up. */
	if (read(st->go, &count, sizeof(count)) != (ssize_t) sizeof(count))
		return 51;
	for (i = 0; i < count; i++) {
		n = rmq_recv(s, buf, st->size + 1, 0);
		if (n != (ssize_t) st->size ||
		    test_check(buf, st->size, (uint64_t) i) != st->size) {
			fprintf(stderr, "stalled: message %d wrong (%zd)\n", i,
			        n);
			fails++;
		}
	}
	rmq_stats(s, &a);
	if (a.recv_msgs[RMQ_PATH_RING] != (uint64_t) count + 1) /* and "hi" */
		fails++;
	n = rmq_send(s, "ok", 2, 0);
	free(buf);
	return fails + (n != 2);
}

static void
ring_credits(const char *prov)
{
	char        bep[64], ep[256], ok[4];
	struct stall st = {.size = 10000}; /* three slots */
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t    *b = malloc(st.size);
	int         pfd[2], sent = 0, total, tmo = 200;
	double      t0;
	ssize_t     n;
	pid_t       pid;

	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(pipe(pfd), 0);
	st.go = pfd[0];
	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_stalled, &st, ep, sizeof(ep));
	close(pfd[0]);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(force(s, RMQ_PATH_RING), 0);
	ck_assert_int_eq(rmq_send(s, "hi", 2, 0), 2);
	for (;;) {
		test_fill(b, st.size, (uint64_t) sent);
		n = rmq_send(s, b, st.size, RMQ_DONTWAIT);
		if (n == -RMQ_EAGAIN)
			break;
		ck_assert_msg(n == (ssize_t) st.size, "%s: send %d: %s", prov,
		              sent, rmq_strerror((int) n));
		sent++;
		ck_assert_int_lt(sent, 1000); /* the ring must run out */
	}
	/* 68 slots, 3 per message: at most 22 fit. */
	ck_assert_int_ge(sent, 1);
	ck_assert_int_le(sent, 22);
	/* A blocking send waits for room, and times out. */
	ck_assert_int_eq(rmq_setopt(s, RMQ_SNDTIMEO, &tmo, sizeof(tmo)), 0);
	t0 = test_now();
	test_fill(b, st.size, (uint64_t) sent);
	n = rmq_send(s, b, st.size, 0);
	ck_assert_int_eq(n, -RMQ_EAGAIN);
	ck_assert(test_now() - t0 >= 0.15);
	/* Let it read; then more messages flow through the freed slots. */
	tmo   = -1;
	total = sent + 40;
	ck_assert_int_eq(rmq_setopt(s, RMQ_SNDTIMEO, &tmo, sizeof(tmo)), 0);
	ck_assert_int_eq(write(pfd[1], &total, sizeof(total)),
	                 (ssize_t) sizeof(total));
	close(pfd[1]);
	for (; sent < total; sent++) {
		test_fill(b, st.size, (uint64_t) sent);
		ck_assert_int_eq(rmq_send(s, b, st.size, 0), (ssize_t) st.size);
	}
	ck_assert_int_eq(rmq_recv(s, ok, sizeof(ok), 0), 2);
	close_all(ctx, s);
	free(b);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_ring_credits)
{
	ring_credits(provs[_i]);
}
END_TEST

/*
 * Both ends send a burst of ring messages, blocking, then read the
 * other's, round after round.  After the first round each receiver holds
 * back what it freed (the sender has not used half its ring: ring_tell);
 * the second round's burst does not fit in what the sender has left, so
 * while both wait for room, the credits must go out as the burst lands --
 * neither application reads until its own burst is out.
 */
#define BOTH_SIZE 10000 /* three slots of 64; a burst of 18 takes 54 */
static const int both_rounds[] = {10, 12, 18, 5, 18, 18};
#define BOTH_ROUNDS ((int) (sizeof(both_rounds) / sizeof(both_rounds[0])))

/* Messages each end sends and receives in all. */
static uint64_t
both_n(void)
{
	uint64_t n = 0;
	int      k;

	for (k = 0; k < BOTH_ROUNDS; k++)
		n += (uint64_t) both_rounds[k];
	return n;
}

static int
both_ways(rmq_socket *s, const char *who)
{
	uint8_t *b = malloc(BOTH_SIZE), *r = malloc(BOTH_SIZE + 1);
	int      sent = 0, got = 0, fails = 0, tmo = 10000, i, k;
	ssize_t  n;

	if (b == NULL || r == NULL ||
	    rmq_setopt(s, RMQ_SNDTIMEO, &tmo, sizeof(tmo)) != 0 ||
	    rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo)) != 0)
		return 1;
	for (k = 0; k < BOTH_ROUNDS && fails == 0; k++) {
		for (i = 0; i < both_rounds[k] && fails == 0; i++, sent++) {
			test_fill(b, BOTH_SIZE, (uint64_t) sent);
			n = rmq_send(s, b, BOTH_SIZE, 0);
			if (n != BOTH_SIZE) {
				fprintf(stderr, "%s: round %d, send %d: %s\n",
				        who, k, sent, rmq_strerror((int) n));
				fails++;
			}
		}
		for (i = 0; i < both_rounds[k] && fails == 0; i++, got++) {
			n = rmq_recv(s, r, BOTH_SIZE + 1, 0);
			if (n != BOTH_SIZE ||
			    test_check(r, BOTH_SIZE, (uint64_t) got) !=
			        BOTH_SIZE) {
				fprintf(stderr, "%s: round %d, message %d: %s\n",
				        who, k, got,
				        n < 0 ? rmq_strerror((int) n) : "wrong");
				fails++;
			}
		}
	}
	free(b);
	free(r);
	return fails;
}

static int
serve_both(rmq_socket *s, void *arg)
{
	struct rmq_stats st;
	char             ok[4];
	int              fails, tmo = 10000, path = RMQ_PATH_RING;

	(void) arg;
	if (force(s, path) != 0)
		return 50;
	fails = both_ways(s, "server");
	rmq_stats(s, &st);
	if (st.recv_msgs[RMQ_PATH_RING] != both_n())
		fails++;
	/* Open until the peer has all of ours. */
	if (rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo)) != 0 ||
	    rmq_recv(s, ok, sizeof(ok), 0) != 2)
		fails++;
	return fails;
}

START_TEST(test_ring_both_ways)
{
	char             bep[64], ep[256];
	struct rmq_stats st;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	pid_t            pid;

	pid = spawn_server(RMQ_PAIR, bind_addr(provs[_i], bep, sizeof(bep)),
	                   serve_both, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(force(s, RMQ_PATH_RING), 0);
	ck_assert_int_eq(both_ways(s, provs[_i]), 0);
	rmq_stats(s, &st);
	ck_assert_uint_eq(st.recv_msgs[RMQ_PATH_RING], both_n());
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_RING], both_n());
	ck_assert_int_eq(rmq_send(s, "ok", 2, 0), 2);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* Many small messages through the ring: complete, in order, no loss. */
static int
serve_count(rmq_socket *s, void *arg)
{
	long     n = *(long *) arg, i, got;
	ssize_t  r;
	int      fails = 0, path = RMQ_PATH_RING;
	struct rmq_stats st;

	if (force(s, path) != 0)
		return 50;
	for (i = 0; i < n; i++) {
		r = rmq_recv(s, &got, sizeof(got), 0);
		if (r != (ssize_t) sizeof(got) || got != i) {
			fprintf(stderr, "stream: message %ld is %ld (%zd)\n", i,
			        got, r);
			fails++;
			break;
		}
	}
	rmq_stats(s, &st);
	if (st.recv_msgs[RMQ_PATH_RING] != (uint64_t) n)
		fails++;
	return fails + (rmq_send(s, "ok", 2, 0) != 2);
}

static void
ring_stream(const char *prov, long n)
{
	char        bep[64], ep[256], ok[4];
	rmq_ctx    *ctx;
	rmq_socket *s;
	long        i;
	pid_t       pid;

	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_count, &n, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(force(s, RMQ_PATH_RING), 0);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(rmq_send(s, &i, sizeof(i), 0),
		                 (ssize_t) sizeof(i));
	ck_assert_int_eq(rmq_recv(s, ok, sizeof(ok), 0), 2);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_ring_million_shm)
{
	ring_stream("shm", 1000000);
}
END_TEST

START_TEST(test_ring_stream_tcp)
{
	ring_stream("tcp", 100000);
}
END_TEST

/* A REP whose reply no path can carry may still answer with another. */
static int
serve_rep_retry(rmq_socket *s, void *arg)
{
	static uint8_t big[65536];
	char           q[8];
	int            path = RMQ_PATH_INJECT, fails = 0;

	(void) arg;
	if (force(s, path) != 0 || rmq_recv(s, q, sizeof(q), 0) != 1)
		return 50;
	if (rmq_send(s, big, sizeof(big), 0) != -RMQ_EMSGSIZE)
		fails++;
	if (rmq_send(s, "abc", 3, 0) != 3)
		fails++;
	return fails;
}

START_TEST(test_rep_reply_after_emsgsize)
{
	char        bep[64], ep[256], a[8];
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	pid = spawn_server(RMQ_REP, bind_addr("shm", bep, sizeof(bep)),
	                   serve_rep_retry, NULL, ep, sizeof(ep));
	open_connected(RMQ_REQ, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, "q", 1, 0), 1);
	ck_assert_int_eq(rmq_recv(s, a, sizeof(a), 0), 3);
	ck_assert(memcmp(a, "abc", 3) == 0);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* A path the provider cannot do is refused with a reason, not ignored. */
START_TEST(test_force_bad_value)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	int         v = RMQ_PATH_COUNT;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_PATH, &v, sizeof(v)), -RMQ_EINVAL);
	v = -2;
	ck_assert_int_eq(rmq_setopt(s, RMQ_PATH, &v, sizeof(v)), -RMQ_EINVAL);
	v = RMQ_PATH_RING;
	ck_assert_int_eq(rmq_setopt(s, RMQ_RNDV_PATH, &v, sizeof(v)),
	                 -RMQ_EINVAL);
	close_all(ctx, s);
}
END_TEST

/* ---- sends in place (thresholds.in_place, rmq_paths(7)) ---- */

#define IP_N   40
#define IP_MAX 65536
static const size_t ip_sizes[] = {8191, 8192, 16384, IP_MAX};
#define IP_NSZ (sizeof(ip_sizes) / sizeof(ip_sizes[0]))

/* Echo each request with other bytes, from one buffer that is written over
 * as soon as each send returns; then take a stream of 16 KiB messages. */
static int
serve_in_place(rmq_socket *s, void *arg)
{
	uint8_t *b = malloc(IP_MAX + 1);
	size_t   sz;
	ssize_t  n;
	int      i, fails = 0;

	(void) arg;
	if (b == NULL)
		return 50;
	for (i = 0; i < IP_N; i++) {
		sz = ip_sizes[i % IP_NSZ];
		n  = rmq_recv(s, b, IP_MAX + 1, 0);
		if (n != (ssize_t) sz || test_check(b, sz, (uint64_t) i) != sz) {
			fprintf(stderr, "in place: request %d wrong (%zd)\n", i,
			        n);
			fails++;
		}
		test_fill(b, sz, (uint64_t) i + 1000);
		if (rmq_send(s, b, sz, 0) != (ssize_t) sz)
			fails++;
		memset(b, 0xa5, sz);
	}
	for (i = 0; i < IP_N; i++) {
		n = rmq_recv(s, b, IP_MAX + 1, 0);
		if (n != 16384 ||
		    test_check(b, 16384, (uint64_t) i + 2000) != 16384) {
			fprintf(stderr, "in place: stream %d wrong (%zd)\n", i,
			        n);
			fails++;
		}
	}
	free(b);
	return fails + (rmq_send(s, "ok", 2, 0) != 2);
}

/* Which path carried the one message sent between a and b. */
static int
sent_by(const struct rmq_stats *a, const struct rmq_stats *b)
{
	int k;

	for (k = 0; k < RMQ_PATH_MAX; k++)
		if (b->sent_msgs[k] != a->sent_msgs[k])
			return k;
	return -1;
}

START_TEST(test_in_place)
{
	const char      *prov   = provs[_i];
	bool             tcp    = strcmp(prov, "tcp") == 0;
	bool             strict;
	char             bep[64], ep[256], ok[4];
	struct rmq_stats a, b;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	uint8_t         *m = malloc(IP_MAX + 1);
	uint64_t         stream = 0;
	size_t           sz;
	bool             want;
	int              i, path, flags;
	pid_t            pid;

	ck_assert_ptr_nonnull(m);
	setenv("RMQ_COALESCE", "0", 1); /* the stream's messages go alone */
	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_in_place, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	strict = is_strict(s);
	for (i = 0; i < IP_N; i++) {
		sz    = ip_sizes[i % IP_NSZ];
		flags = i % 5 == 4 ? RMQ_DONTWAIT : 0;
		test_fill(m, sz, (uint64_t) i);
		rmq_stats(s, &a);
		ck_assert_int_eq(rmq_send(s, m, sz, flags), (ssize_t) sz);
		rmq_stats(s, &b);
		memset(m, 0x5a, sz); /* ours again: the peer must not see it */
		path = sent_by(&a, &b);
		/* Not the first (nothing came from the peer before it), not
		 * below 8 KiB, not with RMQ_DONTWAIT, only by eager or ring,
		 * never when strict, and only on tcp: shm's and sockets'
		 * sends wait for the peer (their rows). */
		want = i > 0 && sz >= 8192 && flags == 0 && !strict && tcp &&
		       (path == RMQ_PATH_EAGER || path == RMQ_PATH_RING);
		ck_assert_msg(b.sent_in_place - a.sent_in_place == (want ? 1 : 0),
		              "%s: request %d, %zu B by %s: %s in place", prov,
		              i, sz, rmq_path_name(path),
		              want ? "not" : "went");
		ck_assert_int_eq(rmq_recv(s, m, IP_MAX + 1, 0), (ssize_t) sz);
		ck_assert_uint_eq(test_check(m, sz, (uint64_t) i + 1000), sz);
	}
	/* Back to back, no reply between: only the first goes in place
	 * (a reply came before it); the rest are copied, none waits. */
	rmq_stats(s, &a);
	for (i = 0; i < IP_N; i++) {
		test_fill(m, 16384, (uint64_t) i + 2000);
		ck_assert_int_eq(rmq_send(s, m, 16384, 0), 16384);
		memset(m, 0x5a, 16384);
	}
	rmq_stats(s, &b);
	stream = b.sent_in_place - a.sent_in_place;
	path   = sent_by(&a, &b);
	want   = !strict && tcp &&
	         (path == RMQ_PATH_EAGER || path == RMQ_PATH_RING);
	ck_assert_msg(stream == (want ? 1 : 0),
	              "%s: %llu of a stream's %d sends in place", prov,
	              (unsigned long long) stream, IP_N);
	ck_assert_int_eq(rmq_recv(s, ok, sizeof(ok), 0), 2);
	close_all(ctx, s);
	free(m);
	unsetenv("RMQ_COALESCE");
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/*
 * A send in place to a peer that cannot progress at all (stopped between
 * its request and our reply) still returns: tcp completes it into the
 * socket buffers.  Were it to wait for the peer, this test would hang
 * until its timeout.  tcp only: that is the row with sends in place
 * (RMQ_PROV_TX_LOCAL_DONE); shm's and sockets' sends wait for the peer,
 * and sockets' own progress thread may not even have sent the request
 * when the peer stops.
 */
static int
serve_then_stop(rmq_socket *s, void *arg)
{
	uint8_t *b = malloc(IP_MAX + 1);
	int      fails = 0;

	(void) arg;
	if (b == NULL || rmq_send(s, "req", 3, 0) != 3)
		return 50;
	raise(SIGSTOP); /* no librmq thread of ours runs until SIGCONT */
	if (rmq_recv(s, b, IP_MAX + 1, 0) != IP_MAX ||
	    test_check(b, IP_MAX, 77) != IP_MAX) {
		fprintf(stderr, "in place to a stopped peer: reply wrong\n");
		fails++;
	}
	free(b);
	return fails;
}

START_TEST(test_in_place_stopped_peer)
{
	const char      *prov   = "tcp";
	char             bep[64], ep[256], req[8];
	struct rmq_stats a, b;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	uint8_t         *m = malloc(IP_MAX);
	int              wst = 0;
	pid_t            pid;

	ck_assert_ptr_nonnull(m);
	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_then_stop, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_recv(s, req, sizeof(req), 0), 3);
	ck_assert_int_eq(waitpid(pid, &wst, WUNTRACED), pid);
	ck_assert(WIFSTOPPED(wst));
	test_fill(m, IP_MAX, 77);
	rmq_stats(s, &a);
	ck_assert_int_eq(rmq_send(s, m, IP_MAX, 0), (ssize_t) IP_MAX);
	rmq_stats(s, &b);
	memset(m, 0x5a, IP_MAX);
	ck_assert_uint_eq(b.sent_in_place - a.sent_in_place,
	                  is_strict(s) ? 0 : 1);
	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	ck_assert_int_eq(reap(pid), 0);
	close_all(ctx, s);
	free(m);
}
END_TEST

static Suite *
paths_suite(void)
{
	Suite *s  = suite_create("paths");
	/* What this checks is each provider path, forced: not the local path, which
	 * same-host peers take by default (check_local.c tests that). */
	setenv("RMQ_LOCAL", "0", 1);
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, test_forced_pair, 0, 3 * NPATHS);
	tcase_add_loop_test(tc, test_forced_reqrep, 0, 6);
	tcase_add_loop_test(tc, test_remap_same_address, 0, 6);
	tcase_add_loop_test(tc, test_ring_by_size, 0, 3);
	tcase_add_loop_test(tc, test_ring_credits, 0, 3);
	tcase_add_loop_test(tc, test_ring_both_ways, 0, 3);
	tcase_add_test(tc, test_ring_million_shm);
	tcase_add_test(tc, test_ring_stream_tcp);
	tcase_add_test(tc, test_force_bad_value);
	tcase_add_test(tc, test_rep_reply_after_emsgsize);
	tcase_add_loop_test(tc, test_in_place, 0, 3);
	tcase_add_test(tc, test_in_place_stopped_peer);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(paths_suite)
