/*
 * The local path (rmq_paths(7), LOCAL): peers on this host share a ring,
 * whatever the provider.  Real processes, real providers (shm, tcp),
 * through the public API only; the hostile test finds the victim's ring
 * in its own mappings, as any process of the same user could.
 *
 * The whole file runs with RMQ_LOCAL=1 and a 256 KiB ring
 * (RMQ_LOCAL_RING), so messages up to 64 KiB - 16 go through the ring
 * and larger ones by a rendezvous whose RTS goes through it, the payload
 * read out of the sender's memory (check_local_large.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "checkmain.h"
#include "testutil.h"

#define RING      (256u * 1024u)
#define LOCAL_MAX (RING / 4 - 16)

static const char *const provs[] = {"shm", "tcp"};

/* A stream's sizes: empty, small, around the ring's limit, rendezvous. */
static const size_t sizes[] = {
	0, 1, 8, 64, 1000, 4096, LOCAL_MAX - 1, LOCAL_MAX, LOCAL_MAX + 1,
	200000, 17, 0, 3 * 4096 + 5,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define ROUNDS 40

static uint64_t
stat_sum(const uint64_t *v)
{
	uint64_t n = 0;
	int      i;

	for (i = 0; i < RMQ_PATH_MAX; i++)
		n += v[i];
	return n;
}

/* Memfd rings this process has open (our own receive rings). */
static int
memfds_open(void)
{
	char           path[300], link[256];
	DIR           *d = opendir("/proc/self/fd");
	struct dirent *de;
	ssize_t        n;
	int            count = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strstr(link, "memfd:rmq-local") != NULL)
			count++;
	}
	closedir(d);
	return count;
}

/* A PULL of this process bound on prov; its endpoint in ep. */
static void
bind_pull(const char *prov, rmq_ctx **ctx, rmq_socket **s, char *ep,
          size_t eplen)
{
	char bep[64];

	ck_assert_int_eq(rmq_ctx_new(ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(*ctx, RMQ_PULL, s), 0);
	ck_assert_int_eq(rmq_bind(*s, bind_addr(prov, bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_getopt(*s, RMQ_LAST_ENDPOINT, ep, &eplen), 0);
}

/* ---- a stream both ways, in order, every byte ---- */

static int
serve_check(rmq_socket *s, void *arg)
{
	uint8_t         *b = malloc(256 * 1024);
	struct rmq_stats st;
	int              fails = 0, r, i;
	ssize_t          n;

	(void) arg;
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	for (r = 0; r < ROUNDS && fails == 0; r++)
		for (i = 0; i < (int) NSIZES && fails == 0; i++) {
			n = rmq_recv(s, b, 256 * 1024, 0);
			if (n != (ssize_t) sizes[i] ||
			    test_check(b, (size_t) n, (uint64_t) (r * 100 + i)) !=
			        (size_t) n) {
				fprintf(stderr, "round %d item %d: %zd bytes, "
				        "wanted %zu (or wrong bytes)\n", r, i, n,
				        sizes[i]);
				fails++;
				break;
			}
			/* Back as it came: the reply goes the other way. */
			if (rmq_send(s, b, (size_t) n, 0) < 0)
				fails++;
		}
	rmq_stats(s, &st);
	if (st.recv_msgs[RMQ_PATH_LOCAL] == 0 ||
	    st.sent_msgs[RMQ_PATH_LOCAL] == 0) {
		fprintf(stderr, "server: nothing on the local path\n");
		fails++;
	}
	free(b);
	return fails;
}

static void
stream(const char *prov, int type, int peer_type)
{
	char             bep[64], ep[256];
	uint8_t         *b = malloc(256 * 1024), *c = malloc(256 * 1024);
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	pid_t            srv;
	ssize_t          n;
	int              r, i;
	uint64_t         want_local = 0;

	srv = spawn_server(peer_type, bind_addr(prov, bep, sizeof(bep)),
	                   serve_check, NULL, ep, sizeof(ep));
	open_connected(type, ep, &ctx, &s);
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	for (r = 0; r < ROUNDS; r++)
		for (i = 0; i < (int) NSIZES; i++) {
			test_fill(b, sizes[i], (uint64_t) (r * 100 + i));
			ck_assert_int_eq(rmq_send(s, b, sizes[i], 0),
			                 (int) sizes[i]);
			want_local++; /* larger: read out of our memory */
			n = rmq_recv(s, c, 256 * 1024, 0);
			ck_assert_msg(n == (ssize_t) sizes[i],
			              "%s: reply %d/%d: %zd bytes, not %zu", prov,
			              r, i, n, sizes[i]);
			ck_assert(memcmp(b, c, sizes[i]) == 0);
		}
	rmq_stats(s, &st);
	ck_assert_msg(st.sent_msgs[RMQ_PATH_LOCAL] == want_local,
	              "%s: %llu sent by the local path, not all %llu", prov,
	              (unsigned long long) st.sent_msgs[RMQ_PATH_LOCAL],
	              (unsigned long long) want_local);
	ck_assert_uint_eq(stat_sum(st.sent_msgs), (uint64_t) ROUNDS * NSIZES);
	ck_assert_uint_eq(st.recv_msgs[RMQ_PATH_LOCAL], want_local);
	ck_assert_uint_eq(st.proto_errors, 0);
	close_all(ctx, s);
	ck_assert_int_eq(reap(srv), 0);
	free(b);
	free(c);
}

START_TEST(test_stream_pair)
{
	stream(provs[_i], RMQ_PAIR, RMQ_PAIR);
}
END_TEST

START_TEST(test_stream_reqrep)
{
	stream(provs[_i], RMQ_REQ, RMQ_REP);
}
END_TEST

/* ---- one side without it: the provider carries everything ---- */

static int
serve_echo_nolocal(rmq_socket *s, void *arg)
{
	uint8_t          b[4096];
	struct rmq_stats st;
	ssize_t          n;
	int              i, fails = 0;

	(void) arg;
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	for (i = 0; i < 100; i++) {
		n = rmq_recv(s, b, sizeof(b), 0);
		if (n < 0 || rmq_send(s, b, (size_t) n, 0) < 0) {
			fails++;
			break;
		}
	}
	rmq_stats(s, &st);
	fails += st.recv_msgs[RMQ_PATH_LOCAL] != 0;
	return fails;
}

START_TEST(test_one_side_off)
{
	const char      *prov = provs[_i];
	char             bep[64], ep[256];
	uint8_t          b[64], c[64];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	pid_t            srv;
	int              i;

	setenv("RMQ_LOCAL", "0", 1);
	srv = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_echo_nolocal, NULL, ep, sizeof(ep));
	setenv("RMQ_LOCAL", "1", 1);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	for (i = 0; i < 100; i++) {
		test_fill(b, sizeof(b), (uint64_t) i);
		ck_assert_int_eq(rmq_send(s, b, sizeof(b), 0), sizeof(b));
		ck_assert_int_eq(rmq_recv(s, c, sizeof(c), 0), sizeof(c));
		ck_assert(memcmp(b, c, sizeof(b)) == 0);
	}
	rmq_stats(s, &st);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_LOCAL], 0);
	ck_assert_uint_eq(st.recv_msgs[RMQ_PATH_LOCAL], 0);
	/* Our ring for it, made before its HELLO said no, is gone. */
	ck_assert_int_eq(memfds_open(), 0);
	close_all(ctx, s);
	ck_assert_int_eq(reap(srv), 0);
}
END_TEST

/* ---- a receiver that stops reading: backpressure, not memory ---- */

static int
serve_stall(rmq_socket *s, void *arg)
{
	int     *go = arg, fails = 0, i;
	uint8_t  b[2048];
	ssize_t  n;

	setopt_int(s, RMQ_RCVTIMEO, 20000);
	/* Take nothing until the sender has hit the wall. */
	while (atomic_load((atomic_int *) go) == 0)
		usleep(1000);
	for (i = 0; i < 3000; i++) {
		n = rmq_recv(s, b, sizeof(b), 0);
		if (n != 1500 || test_check(b, 1500, (uint64_t) i) != 1500) {
			fprintf(stderr, "stall: message %d: %zd\n", i, n);
			fails++;
			break;
		}
	}
	return fails;
}

START_TEST(test_backpressure)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256];
	uint8_t     b[1500];
	atomic_int *go = test_shared(sizeof(*go));
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       srv;
	int         sent = 0, rc = 0;

	srv = spawn_server_opts(RMQ_PULL, bind_addr(prov, bep, sizeof(bep)),
	                        serve_stall, go, ep, sizeof(ep), 100000, 0);
	open_connected(RMQ_PUSH, ep, &ctx, &s);
	setopt_int(s, RMQ_SNDHWM, 100000);
	/* The receiver grants 100000 messages; its 256 KiB ring holds about
	 * 170 of these: the ring is the wall, and a send that cannot wait
	 * says so. */
	while (sent < 3000) {
		test_fill(b, sizeof(b), (uint64_t) sent);
		rc = (int) rmq_send(s, b, sizeof(b), RMQ_DONTWAIT);
		if (rc < 0)
			break;
		sent++;
	}
	ck_assert_int_eq(rc, -RMQ_EAGAIN);
	ck_assert_int_lt(sent, 400);
	atomic_store(go, 1);
	setopt_int(s, RMQ_SNDTIMEO, 20000);
	for (; sent < 3000; sent++) {
		test_fill(b, sizeof(b), (uint64_t) sent);
		ck_assert_int_eq(rmq_send(s, b, sizeof(b), 0), sizeof(b));
	}
	close_all(ctx, s);
	ck_assert_int_eq(reap(srv), 0);
}
END_TEST

/* ---- credits, not the ring, the wall: small messages (PAIR: its
 * send picks its peer without looking at credits, xfer.c does) ---- */

struct stall_small {
	atomic_int go;
	int        n; /* messages the puller takes, in order */
};

static int
serve_stall_small(rmq_socket *s, void *arg)
{
	struct stall_small *st = arg;
	uint8_t             b[256];
	ssize_t             n;
	int                 fails = 0, i;

	setopt_int(s, RMQ_RCVTIMEO, 20000);
	while (atomic_load(&st->go) == 0)
		usleep(1000);
	for (i = 0; i < st->n; i++) {
		n = rmq_recv(s, b, sizeof(b), 0);
		if (n != (ssize_t) (i % 200) + 1 ||
		    test_check(b, (size_t) n, (uint64_t) i) != (size_t) n) {
			fprintf(stderr, "small stall: message %d: %zd\n", i, n);
			fails++;
			break;
		}
	}
	return fails;
}

/* The receiver grants 8 messages (RMQ_RCVHWM); its ring (or its slabs)
 * would hold thousands of these.  A send that goes at once (the ring's
 * short way, or fi_inject's: loops 2 and 3 turn the local path off) must
 * still stop at the credits, and every message then arrive once and in
 * order as the puller frees them. */
START_TEST(test_credit_wall)
{
	const char         *prov = provs[_i % 2];
	bool                local = _i < 2;
	char                bep[64], ep[256];
	uint8_t             b[256];
	struct stall_small *st = test_shared(sizeof(*st));
	rmq_ctx            *ctx;
	rmq_socket         *s;
	struct rmq_stats    ss;
	pid_t               srv;
	int                 sent = 0, rc = 0;
	size_t              len;

	st->n = 20000;
	if (!local) {
		/* Both sides; every message alone, so fi_inject's short way
		 * takes the stream (a coalescing one takes the general). */
		setenv("RMQ_LOCAL", "0", 1);
		setenv("RMQ_COALESCE", "0", 1);
	}
	srv   = spawn_server_opts(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                          serve_stall_small, st, ep, sizeof(ep), 8, 0);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	if (!local) {
		/* Read by rmq_ctx_new only; the suite's again for the tests
		 * after this one where they share a process (CK_FORK=no, as
		 * under valgrind). */
		setenv("RMQ_LOCAL", "1", 1);
		unsetenv("RMQ_COALESCE");
	}
	while (sent < 1000) {
		len = (size_t) (sent % 200) + 1;
		test_fill(b, len, (uint64_t) sent);
		rc = (int) rmq_send(s, b, len, RMQ_DONTWAIT);
		if (rc < 0)
			break;
		sent++;
	}
	ck_assert_int_eq(rc, -RMQ_EAGAIN);
	ck_assert_msg(sent >= 1 && sent <= 8,
	              "%s: %d sends went before the receiver took any, with "
	              "8 credits", prov, sent);
	atomic_store(&st->go, 1);
	setopt_int(s, RMQ_SNDTIMEO, 20000);
	for (; sent < st->n; sent++) {
		len = (size_t) (sent % 200) + 1;
		test_fill(b, len, (uint64_t) sent);
		ck_assert_int_eq(rmq_send(s, b, len, 0), (int) len);
	}
	rmq_stats(s, &ss);
	ck_assert_uint_eq(ss.sent_msgs[RMQ_PATH_LOCAL],
	                  local ? (uint64_t) st->n : 0);
	ck_assert_uint_eq(stat_sum(ss.sent_msgs), (uint64_t) st->n);
	close_all(ctx, s);
	ck_assert_int_eq(reap(srv), 0);
}
END_TEST

/* ---- PUSH/PULL: two pushers into one puller ---- */

static int
pusher(void *arg)
{
	const char *ep = arg;
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t     b[304];
	int         i, fails = 0;

	if (open_socket(RMQ_PUSH, &ctx, &s) != 0 || rmq_connect(s, ep) != 0)
		return 1;
	setopt_int(s, RMQ_SNDTIMEO, 20000);
	for (i = 0; i < 2000 && fails == 0; i++) {
		test_fill(b, sizeof(b), (uint64_t) i);
		memcpy(b, &i, sizeof(i));
		fails += rmq_send(s, b, (size_t) (i % 300) + 4, 0) < 0;
	}
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return fails;
}

START_TEST(test_pushpull)
{
	const char      *prov = provs[_i];
	char             ep[256];
	uint8_t          b[300];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	pid_t            kids[2];
	int              next[2] = {0, 0}, i, k, v;
	ssize_t          n;

	bind_pull(prov, &ctx, &s, ep, sizeof(ep));
	for (k = 0; k < 2; k++)
		kids[k] = spawn_child(pusher, ep);
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	/* Two streams interleaved: each in order, each message whole.  The
	 * sender is told apart by the order its numbers come in. */
	for (i = 0; i < 4000; i++) {
		n = rmq_recv(s, b, sizeof(b), 0);
		ck_assert_int_ge(n, 4);
		memcpy(&v, b, sizeof(v));
		k = next[0] == v ? 0 : 1;
		ck_assert_msg(next[k] == v, "%s: message %d, expected %d or %d",
		              prov, v, next[0], next[1]);
		ck_assert_int_eq(n, (v % 300) + 4);
		next[k]++;
	}
	ck_assert_int_eq(next[0] + next[1], 4000);
	rmq_stats(s, &st);
	ck_assert_uint_eq(st.recv_msgs[RMQ_PATH_LOCAL], 4000);
	for (k = 0; k < 2; k++)
		ck_assert_int_eq(reap(kids[k]), 0);
	close_all(ctx, s);
}
END_TEST

/* ---- coalesced records a sender left unpublished go anyway ---- */

static int
burst_then_sleep(void *arg)
{
	const char *ep = arg;
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t     b[100];
	int         i;

	if (open_socket(RMQ_PUSH, &ctx, &s) != 0 || rmq_connect(s, ep) != 0)
		return 1;
	/* One alone, then a burst that is held back; no call after it. */
	for (i = 0; i < 6; i++) {
		test_fill(b, sizeof(b), (uint64_t) i);
		if (rmq_send(s, b, sizeof(b), 0) < 0)
			return 2;
	}
	sleep(5); /* the context's flusher must publish the burst */
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return 0;
}

START_TEST(test_flusher)
{
	const char      *prov = provs[_i];
	char             ep[256];
	uint8_t          b[100];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	pid_t            kid;
	int              i;

	bind_pull(prov, &ctx, &s, ep, sizeof(ep));
	/* Within the sender's sleep: not its close. */
	setopt_int(s, RMQ_RCVTIMEO, 3000);
	kid = spawn_child(burst_then_sleep, ep);
	for (i = 0; i < 6; i++) {
		ck_assert_msg(rmq_recv(s, b, sizeof(b), 0) == sizeof(b),
		              "%s: message %d not published", prov, i);
		ck_assert_uint_eq(test_check(b, sizeof(b), (uint64_t) i),
		                  sizeof(b));
	}
	rmq_stats(s, &st);
	ck_assert_uint_eq(st.recv_msgs[RMQ_PATH_LOCAL], 6);
	ck_assert_int_eq(reap(kid), 0);
	close_all(ctx, s);
}
END_TEST

/* ---- a local peer killed: detected, its ring freed ---- */

static int
doomed(void *arg)
{
	const char *ep = arg;
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t     b[64] = {0};

	if (open_socket(RMQ_PUSH, &ctx, &s) != 0 || rmq_connect(s, ep) != 0)
		return 1;
	/* Stream until killed. */
	for (;;)
		if (rmq_send(s, b, sizeof(b), 0) < 0)
			return 2;
}

START_TEST(test_kill)
{
	const char      *prov = provs[_i];
	char             ep[256];
	uint8_t          b[64];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	pid_t            kid;
	int              k, before;
	double           t0;

	bind_pull(prov, &ctx, &s, ep, sizeof(ep));
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	before = memfds_open();
	ck_assert_int_eq(before, 0);
	for (k = 0; k < 3; k++) {
		kid = spawn_child(doomed, ep);
		/* Killed while it streams, mid-message or not. */
		ck_assert_int_eq(rmq_recv(s, b, sizeof(b), 0), sizeof(b));
		ck_assert_int_eq(memfds_open(), 1);
		kill(kid, SIGKILL);
		ck_assert_int_eq(reap(kid), 200 + SIGKILL);
		t0 = test_now();
		for (;;) {
			rmq_stats(s, &st);
			if (st.peers_lost == (uint64_t) k + 1)
				break;
			ck_assert_msg(test_now() - t0 < 20, "death not seen");
			(void) rmq_recv(s, b, sizeof(b), RMQ_DONTWAIT);
		}
		/* What it wrote before it died may still be taken; then its
		 * ring goes. */
		while (rmq_recv(s, b, sizeof(b), RMQ_DONTWAIT) > 0)
			;
		ck_assert_int_eq(memfds_open(), 0);
	}
	rmq_stats(s, &st);
	ck_assert_uint_eq(st.proto_errors, 0);
	close_all(ctx, s);
}
END_TEST

/* ---- a peer that scribbles on our ring ---- */

/* The writable shared mapping of a memfd ring that is not one of ours
 * (ours stay open as fds; the peer's was closed once mapped). */
static uint8_t *
peer_ring(void)
{
	FILE              *f = fopen("/proc/self/maps", "r");
	char               line[512], path[300], link[256];
	unsigned long      lo, hi, ino;
	unsigned long      mine[16];
	int                nmine = 0, i;
	struct stat        sb;
	DIR               *d = opendir("/proc/self/fd");
	struct dirent     *de;
	uint8_t           *found = NULL;
	ssize_t            n;

	while (d != NULL && (de = readdir(d)) != NULL && nmine < 16) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strstr(link, "memfd:rmq-local") != NULL &&
		    stat(path, &sb) == 0)
			mine[nmine++] = (unsigned long) sb.st_ino;
	}
	if (d != NULL)
		closedir(d);
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "memfd:rmq-local") == NULL ||
		    sscanf(line, "%lx-%lx %*s %*s %*s %lu", &lo, &hi, &ino) != 3)
			continue;
		for (i = 0; i < nmine && mine[i] != ino; i++)
			;
		if (i == nmine)
			found = (uint8_t *) lo;
	}
	if (f != NULL)
		fclose(f);
	return found;
}

/* The layout (link/local.c): the head page, then the data. */
#define H_SIZE  16
#define H_TAIL  64
#define DATA    512

enum scribble { BAD_HIGH, BAD_LEN, BAD_SHORT, BAD_CONN, BAD_TYPE, NSCRIB };

/* A record at the writer's next place, as the writer puts it: its bytes,
 * then the prefix the reader polls (local_ring.h), then the tail. */
static void
scribble(uint8_t *ring, uint64_t t, uint32_t size, const void *body,
         size_t n, uint64_t pfx)
{
	uint8_t *at = ring + DATA + (t & (size - 1));

	memcpy(at + 8, body, n);
	atomic_store((_Atomic uint64_t *) (void *) at, pfx);
	atomic_store((_Atomic uint64_t *) (void *) (ring + H_TAIL), t + 8 + n);
}

struct attack {
	const char *ep;
	int         how;
};

static int
attacker(void *arg)
{
	const struct attack *a  = arg;
	const char          *ep = a->ep;
	int                  how = a->how;
	rmq_ctx           *ctx;
	rmq_socket        *s;
	uint8_t            b[64] = {0}, *ring, h[16] = {0};
	uint64_t           t;
	uint32_t           size;

	if (open_socket(RMQ_PUSH, &ctx, &s) != 0 || rmq_connect(s, ep) != 0)
		return 1;
	setopt_int(s, RMQ_SNDTIMEO, 5000);
	b[0] = 'G';
	if (rmq_send(s, b, sizeof(b), 0) < 0)
		return 2;
	/* If the send was coalesced, the flusher publishes it within a few
	 * hundred microseconds: our scribble goes after it, not over it. */
	usleep(200000);
	ring = peer_ring();
	if (ring == NULL)
		return 3;
	memcpy(&size, ring + H_SIZE, sizeof(size));
	t    = atomic_load((_Atomic uint64_t *) (void *) (ring + H_TAIL));
	h[0] = 1; /* version */
	switch (how) {
	case BAD_HIGH: /* a prefix with its high word set */
		h[1] = 1; /* DATA */
		scribble(ring, t, size, h, 16, (1ull << 32) | 16);
		break;
	case BAD_LEN: /* a record past the ring's end */
		scribble(ring, t, size, h, 16, size);
		break;
	case BAD_SHORT: /* a record shorter than a header */
		scribble(ring, t, size, h, 16, 8);
		break;
	case BAD_CONN: /* a well-formed DATA for someone else */
		h[1] = 1;    /* DATA */
		h[4] = 0x7f; /* a connection id that is not ours */
		scribble(ring, t, size, h, 16, 16);
		break;
	case BAD_TYPE: /* a BATCH, which would point into a slab */
		h[1] = 11;
		scribble(ring, t, size, h, 16, 16);
		break;
	}
	/* The victim drops us: our next sends fail or vanish. */
	sleep(2);
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return 0;
}

START_TEST(test_hostile)
{
	const char      *prov = provs[_i];
	char             ep[256];
	uint8_t          b[64];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	pid_t            kid;
	int              how;
	double           t0;
	struct attack    a;

	bind_pull(prov, &ctx, &s, ep, sizeof(ep));
	setopt_int(s, RMQ_RCVTIMEO, 20000);
	a.ep = ep;
	for (how = 0; how < NSCRIB; how++) {
		a.how = how;
		kid   = spawn_child(attacker, &a);
		ck_assert_int_eq(rmq_recv(s, b, sizeof(b), 0), sizeof(b));
		ck_assert_int_eq(b[0], 'G');
		t0 = test_now();
		for (;;) {
			rmq_stats(s, &st);
			if (st.proto_errors >= (uint64_t) how + 1 &&
			    st.peers_lost >= (uint64_t) how + 1)
				break;
			ck_assert_msg(test_now() - t0 < 20,
			              "%s: scribble %d not refused (%llu errors)",
			              prov, how,
			              (unsigned long long) st.proto_errors);
			/* Nothing of it is delivered. */
			ck_assert_int_lt(rmq_recv(s, b, sizeof(b), RMQ_DONTWAIT),
			                 0);
		}
		ck_assert_int_eq(reap(kid), 0);
	}
	/* And an honest peer is still served. */
	kid = spawn_child(pusher, ep);
	ck_assert_int_eq(rmq_recv(s, b, sizeof(b), 0), 4);
	kill(kid, SIGKILL);
	reap(kid);
	close_all(ctx, s);
}
END_TEST

static Suite *
local_suite(void)
{
	Suite *su = suite_create("local");
	TCase *tc = tcase_create("local");

	/* The whole file: the local path on, a 256 KiB ring. */
	setenv("RMQ_LOCAL", "1", 1);
	setenv("RMQ_LOCAL_RING", "256KiB", 1);

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_stream_pair, 0, 2);
	tcase_add_loop_test(tc, test_stream_reqrep, 0, 2);
	tcase_add_loop_test(tc, test_one_side_off, 0, 2);
	tcase_add_loop_test(tc, test_backpressure, 0, 2);
	tcase_add_loop_test(tc, test_credit_wall, 0, 4);
	tcase_add_loop_test(tc, test_pushpull, 0, 2);
	tcase_add_loop_test(tc, test_flusher, 0, 2);
	tcase_add_loop_test(tc, test_kill, 0, 2);
	tcase_add_loop_test(tc, test_hostile, 0, 2);
	suite_add_tcase(su, tc);
	return su;
}

RMQ_CHECK_MAIN(local_suite)
