/*
 * Shared-secret authentication (auth.key_file): peers with the same key
 * talk, on every provider, connecting at once or in the background; a
 * peer without it, with another key, or a binder without one is refused
 * with -RMQ_EAUTH on both sides and counted; the key file's rules.  The
 * wire side is checked by a client of our own that speaks the protocol
 * from its description (conn/auth.h) with libsodium: a HELLO before the
 * proof gets only a REJECT (no address, no key), a wrong or replayed
 * proof is refused, the binder's nonce is fresh each time.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sodium.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "checkmain.h"
#include "testutil.h"
#include "wire.h"

static char dir[64];

/* Each test's key files live in a directory of its own, gone after. */
static void
dir_make(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rmq_auth_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
dir_remove(void)
{
	static const char *names[] = {"a", "b", "nl", "g", "o", "short", "long",
	                              "huge", "min", "max", "nl15", "theirs"};
	char               path[128];
	size_t             i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* A key file of n bytes of b, with mode; its path in a static buffer
 * (one per name). */
static const char *
key_file(const char *name, const void *b, size_t n, mode_t mode)
{
	static char paths[8][300];
	static int  next;
	char       *path = paths[next++ % 8];
	int         fd;

	snprintf(path, 300, "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, n), (ssize_t) n);
	close(fd);
	ck_assert_int_eq(chmod(path, mode), 0);
	return path;
}

static const char *
key_a(void)
{
	return key_file("a", "0123456789abcdef0123456789abcdef", 32, 0600);
}

static const char *
key_b(void)
{
	return key_file("b", "0123456789abcdef0123456789abcdeF", 32, 0600);
}

/* A context whose auth.key_file is path (NULL: none). */
static int
ctx_with_key(const char *path, rmq_ctx **ctx)
{
	int rc;

	if (path != NULL)
		setenv("RMQ_AUTH_KEY_FILE", path, 1);
	else
		unsetenv("RMQ_AUTH_KEY_FILE");
	rc = rmq_ctx_new(ctx, NULL);
	unsetenv("RMQ_AUTH_KEY_FILE");
	return rc;
}

/* A REP that echoes until "quit", then checks its refusal count. */
static int
serve_echo(rmq_socket *s, void *arg)
{
	struct rmq_stats st;
	char             buf[256];
	ssize_t          n;
	int              refusals = *(int *) arg;

	for (;;) {
		n = rmq_recv(s, buf, sizeof(buf), 0);
		if (n < 0)
			continue; /* the plain loop */
		if (n == 4 && memcmp(buf, "quit", 4) == 0)
			break;
		if (rmq_send(s, buf, (size_t) n, 0) != n)
			return 1;
	}
	rmq_send(s, "bye", 3, 0);
	rmq_stats(s, &st);
	if ((int) st.auth_failures != refusals) {
		fprintf(stderr, "binder: auth_failures %llu, expected %d\n",
		        (unsigned long long) st.auth_failures, refusals);
		return 2;
	}
	if (st.handshake_errors < st.auth_failures)
		return 3;
	return 0;
}

/* Fork the echoing REP with key (NULL: none); its endpoint in ep. */
static pid_t
spawn_keyed(const char *prov, const char *key, int *refusals, char *ep,
            size_t eplen)
{
	char  bind[64];
	pid_t pid;

	if (key != NULL)
		setenv("RMQ_AUTH_KEY_FILE", key, 1);
	pid = spawn_server(RMQ_REP, bind_addr(prov, bind, sizeof(bind)),
	                   serve_echo, refusals, ep, eplen);
	unsetenv("RMQ_AUTH_KEY_FILE");
	return pid;
}

static void
round_trip(rmq_socket *s, const char *what)
{
	char    buf[64];
	ssize_t n;

	ck_assert_int_eq(rmq_send(s, what, strlen(what), 0),
	                 (ssize_t) strlen(what));
	n = rmq_recv(s, buf, sizeof(buf), 0);
	ck_assert_int_eq(n, (ssize_t) strlen(what));
	ck_assert(memcmp(buf, what, (size_t) n) == 0);
}

/* Connect with key; -error, or 0 and a round trip done. */
static int
client(const char *ep, const char *key, bool async, bool quit)
{
	struct rmq_stats st;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	int              rc, one = 1, ms = 3000;
	char             buf[16];

	ck_assert_int_eq(ctx_with_key(key, &ctx), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_REQ, &s), 0);
	if (async)
		rmq_setopt(s, RMQ_CONNECT_ASYNC, &one, sizeof(one));
	rmq_setopt(s, RMQ_RCVTIMEO, &ms, sizeof(ms));
	rmq_setopt(s, RMQ_SNDTIMEO, &ms, sizeof(ms));
	rc = rmq_connect(s, ep);
	if (rc == 0 && !quit) {
		round_trip(s, "hello, keyed peer");
	} else if (rc == 0) {
		ck_assert_int_eq(rmq_send(s, "quit", 4, 0), 4);
		ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 3);
	}
	rmq_stats(s, &st);
	if (rc == -RMQ_EAUTH)
		ck_assert_uint_eq(st.auth_failures, 1);
	else
		ck_assert_uint_eq(st.auth_failures, 0);
	close_all(ctx, s);
	return rc;
}

/* Same key: sync and async connects; the newline of "echo key > file"
 * is not part of the key. */
static void
keyed(const char *prov)
{
	char        ep[256];
	int         refusals = 0;
	const char *nl = key_file("nl", "0123456789abcdef0123456789abcdef\n",
	                          33, 0400);
	pid_t       pid = spawn_keyed(prov, key_a(), &refusals, ep, sizeof(ep));

	ck_assert_int_eq(client(ep, key_a(), false, false), 0);
	ck_assert_int_eq(client(ep, key_a(), true, false), 0);
	ck_assert_int_eq(client(ep, nl, false, true), 0);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_keyed_shm) { keyed("shm"); }
END_TEST
START_TEST(test_keyed_tcp) { keyed("tcp"); }
END_TEST
START_TEST(test_keyed_sockets) { keyed("sockets"); }
END_TEST

/*
 * No key, another key: refused at once with -RMQ_EAUTH, counted on both
 * sides, and the binder serves the next good peer.  A binder without a
 * key refuses a keyed peer the same way.
 */
static void
refused(const char *prov)
{
	char  ep[256];
	int   refusals = 2, none = 1;
	pid_t pid = spawn_keyed(prov, key_a(), &refusals, ep, sizeof(ep));

	ck_assert_int_eq(client(ep, NULL, false, false), -RMQ_EAUTH);
	ck_assert_int_eq(client(ep, key_b(), false, false), -RMQ_EAUTH);
	ck_assert_int_eq(client(ep, key_a(), false, true), 0);
	ck_assert_int_eq(reap(pid), 0);

	pid = spawn_keyed(prov, NULL, &none, ep, sizeof(ep));
	ck_assert_int_eq(client(ep, key_a(), false, false), -RMQ_EAUTH);
	ck_assert_int_eq(client(ep, NULL, false, true), 0);
	ck_assert_int_eq(reap(pid), 0);
}

START_TEST(test_refused_shm) { refused("shm"); }
END_TEST
START_TEST(test_refused_tcp) { refused("tcp"); }
END_TEST
START_TEST(test_refused_sockets) { refused("sockets"); }
END_TEST

/* A connect in the background with the wrong key keeps trying, counts
 * each refusal, and never delivers. */
START_TEST(test_refused_async)
{
	struct rmq_stats st;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	char             ep[256];
	int              refusals, one = 1, ivl = 20, ms = 300;
	pid_t            pid;

	/* The binder's count depends on how many tries fit: not checked. */
	refusals = -1;
	pid = spawn_keyed("tcp", key_a(), &refusals, ep, sizeof(ep));
	ck_assert_int_eq(ctx_with_key(key_b(), &ctx), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_REQ, &s), 0);
	rmq_setopt(s, RMQ_CONNECT_ASYNC, &one, sizeof(one));
	rmq_setopt(s, RMQ_RECONNECT_IVL, &ivl, sizeof(ivl));
	rmq_setopt(s, RMQ_SNDTIMEO, &ms, sizeof(ms));
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	ck_assert_int_eq(rmq_send(s, "x", 1, 0), -RMQ_EAGAIN);
	rmq_stats(s, &st);
	ck_assert_uint_ge(st.auth_failures, 2);
	ck_assert_uint_eq(st.peers_connected, 0);
	close_all(ctx, s);
	kill(pid, SIGKILL);
	reap(pid);
}
END_TEST

/* ---- the wire, spoken by hand ---- */

/* One frame (2 s at most): its kind, body in body; -1 at EOF. */
static int
raw_read(int fd, uint8_t *body, size_t *len)
{
	uint8_t        hdr[RMQ_CTRL_HDR_SIZE];
	struct timeval tv = {2, 0};
	size_t         have = 0;
	ssize_t        r;
	int            kind;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (have < sizeof(hdr)) {
		r = recv(fd, hdr + have, sizeof(hdr) - have, 0);
		if (r <= 0)
			return -1;
		have += (size_t) r;
	}
	ck_assert_int_eq(rmq_ctrl_decode_hdr(hdr, &kind, len), 0);
	for (have = 0; have < *len; have += (size_t) r) {
		r = recv(fd, body + have, *len - have, 0);
		ck_assert_int_gt(r, 0);
	}
	return kind;
}

static void
raw_send(int fd, const uint8_t *b, size_t n)
{
	ck_assert_int_eq(send(fd, b, n, MSG_NOSIGNAL), (ssize_t) n);
}

/* The frame is a REJECT with code, and the binder then closes. */
static void
expect_reject(int fd, uint32_t code)
{
	uint8_t           body[RMQ_CTRL_BODY_MAX];
	struct rmq_reject rj;
	size_t            len;

	ck_assert_int_eq(raw_read(fd, body, &len), RMQ_CK_REJECT);
	ck_assert_int_eq(rmq_ctrl_decode_reject(&rj, body, len), 0);
	ck_assert_msg(rj.code == code, "REJECT %u (%s), expected %u",
	              rj.code, rj.reason, code);
	ck_assert_int_eq(raw_read(fd, body, &len), -1); /* nothing else */
	close(fd);
}

/* HMAC-SHA-256(key, label NUL | nc | nb), as conn/auth.h describes. */
static void
mac_of(const char *label, const uint8_t *nc, const uint8_t *nb,
       uint8_t *mac)
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st,
	                            (const uint8_t *) "0123456789abcdef"
	                                              "0123456789abcdef",
	                            32);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *) label,
	                              strlen(label) + 1);
	crypto_auth_hmacsha256_update(&st, nc, RMQ_AUTH_NONCE);
	crypto_auth_hmacsha256_update(&st, nb, RMQ_AUTH_NONCE);
	crypto_auth_hmacsha256_final(&st, mac);
}

/* Our challenge nc: the binder's nonce (its proof checked) in nb. */
static int
raw_challenge(const char *ep, const uint8_t *nc, uint8_t *nb)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX], zero[32] = {0};
	uint8_t mac[32], want[32];
	size_t  len;
	int     fd = tcp_connect_raw(ep);

	raw_send(fd, b, rmq_ctrl_encode_auth(b, nc, zero));
	ck_assert_int_eq(raw_read(fd, b, &len), RMQ_CK_AUTH);
	ck_assert_int_eq(rmq_ctrl_decode_auth(nb, mac, b, len), 0);
	mac_of("librmq auth 1 binder", nc, nb, want);
	ck_assert(memcmp(mac, want, 32) == 0);
	return fd;
}

START_TEST(test_wire)
{
	uint8_t          b[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX];
	uint8_t          nc[32], nb[32], nb2[32], mac[32];
	struct rmq_hello h;
	char             ep[256];
	int              refusals = 5, fd;
	pid_t            pid;

	ck_assert_int_ge(sodium_init(), 0);
	pid = spawn_keyed("tcp", key_a(), &refusals, ep, sizeof(ep));
	memset(&h, 0, sizeof(h));
	h.pattern  = 0x7777; /* no such pattern: refused after the proof */
	fabric_prov_name("tcp", h.prov, sizeof(h.prov));
	h.addr_len = 16;
	h.rcvhwm   = 10;
	h.maxmsg   = UINT64_MAX;

	/* 1. A HELLO first: a REJECT, and nothing of the binder's. */
	fd = tcp_connect_raw(ep);
	raw_send(fd, b, rmq_ctrl_encode_hello(b, &h));
	expect_reject(fd, RMQ_EAUTH);

	/* 2. A wrong proof. */
	randombytes_buf(nc, sizeof(nc));
	fd = raw_challenge(ep, nc, nb);
	memset(mac, 0x42, sizeof(mac));
	raw_send(fd, b, rmq_ctrl_encode_auth(b, nc, mac));
	expect_reject(fd, RMQ_EAUTH);

	/* 3. A HELLO after the challenge, without the proof. */
	fd = raw_challenge(ep, nc, nb);
	raw_send(fd, b, rmq_ctrl_encode_hello(b, &h));
	expect_reject(fd, RMQ_EAUTH);

	/* 4. The right proof: past authentication, the HELLO is judged on
	 * its own (a pattern nobody has). */
	fd = raw_challenge(ep, nc, nb);
	mac_of("librmq auth 1 connecter", nc, nb, mac);
	raw_send(fd, b, rmq_ctrl_encode_auth(b, nc, mac));
	raw_send(fd, b, rmq_ctrl_encode_hello(b, &h));
	expect_reject(fd, RMQ_EPATTERN);

	/* 5. That proof again, with the same challenge: the binder's nonce
	 * is new, so the old proof is refused. */
	fd = raw_challenge(ep, nc, nb2);
	ck_assert(memcmp(nb, nb2, sizeof(nb)) != 0);
	raw_send(fd, b, rmq_ctrl_encode_auth(b, nc, mac));
	expect_reject(fd, RMQ_EAUTH);

	/* 6. The binder's own proof sent back as ours (a reflection). */
	fd = raw_challenge(ep, nc, nb);
	mac_of("librmq auth 1 binder", nc, nb, mac);
	raw_send(fd, b, rmq_ctrl_encode_auth(b, nc, mac));
	expect_reject(fd, RMQ_EAUTH);

	ck_assert_int_eq(client(ep, key_a(), false, true), 0);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* The key file's rules, each refused by rmq_ctx_new with a reason. */
START_TEST(test_key_file_rules)
{
	static char big[4200];
	rmq_ctx    *ctx;
	const char *p;

	memset(big, 'k', sizeof(big));
	/* readable by the group or others */
	p = key_file("g", big, 32, 0640);
	ck_assert_int_eq(ctx_with_key(p, &ctx), -RMQ_ECONFIG);
	p = key_file("o", big, 32, 0604);
	ck_assert_int_eq(ctx_with_key(p, &ctx), -RMQ_ECONFIG);
	/* too short, too long; the bounds themselves */
	p = key_file("short", big, 15, 0600);
	ck_assert_int_eq(ctx_with_key(p, &ctx), -RMQ_ECONFIG);
	p = key_file("long", big, 4097, 0600);
	ck_assert_int_eq(ctx_with_key(p, &ctx), -RMQ_ECONFIG);
	p = key_file("huge", big, sizeof(big), 0600);
	ck_assert_int_eq(ctx_with_key(p, &ctx), -RMQ_ECONFIG);
	p = key_file("min", big, 16, 0600);
	ck_assert_int_eq(ctx_with_key(p, &ctx), 0);
	rmq_ctx_destroy(ctx);
	p = key_file("max", big, 4096, 0400);
	ck_assert_int_eq(ctx_with_key(p, &ctx), 0);
	rmq_ctx_destroy(ctx);
	/* a newline alone does not make 16 */
	memcpy(big + 15, "\n", 1);
	p = key_file("nl15", big, 16, 0600);
	ck_assert_int_eq(ctx_with_key(p, &ctx), -RMQ_ECONFIG);
	/* missing; a directory */
	ck_assert_int_eq(ctx_with_key("/nonexistent/rmq.key", &ctx), -ENOENT);
	ck_assert_int_eq(ctx_with_key(dir, &ctx), -RMQ_ECONFIG);
	/* someone else's (root can make one) */
	if (geteuid() == 0) {
		p = key_file("theirs", big, 32, 0600);
		ck_assert_int_eq(chown(p, 65534, 65534), 0);
		ck_assert_int_eq(ctx_with_key(p, &ctx), -RMQ_ECONFIG);
	} else {
		fprintf(stderr, "test_key_file_rules: not root: a key file "
		        "of another user not tried\n");
	}
}
END_TEST

static Suite *
auth_suite(void)
{
	Suite *s  = suite_create("auth");
	TCase *tc = tcase_create("auth");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, dir_make, dir_remove);
	tcase_add_test(tc, test_key_file_rules);
	tcase_add_test(tc, test_keyed_shm);
	tcase_add_test(tc, test_keyed_tcp);
	tcase_add_test(tc, test_keyed_sockets);
	tcase_add_test(tc, test_refused_shm);
	tcase_add_test(tc, test_refused_tcp);
	tcase_add_test(tc, test_refused_sockets);
	tcase_add_test(tc, test_refused_async);
	tcase_add_test(tc, test_wire);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(auth_suite)
