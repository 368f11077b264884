/*
 * Helper for netns_mixed.sh: one bound socket with two peers, one on its
 * host (the same network namespace: the local path) and one on another
 * (a namespace across a veth pair: the provider).  Public API only.
 *
 *   mixed pull ENDPOINT N          bind a PULL, take N from each of 2 PUSHes
 *   mixed rep  ENDPOINT N          bind a REP, answer N from each of 2 REQs
 *   mixed pub  ENDPOINT N          bind a PUB, wait for 2 SUBs, publish N
 *   mixed push ENDPOINT ID N WHERE connect a PUSH, send N
 *   mixed req  ENDPOINT ID N WHERE connect a REQ, ask N, check the echoes
 *   mixed sub  ENDPOINT ID N WHERE connect a SUB, take N
 *
 * Message k of sender ID is sized (every 16th past the local ring's
 * largest, so a rendezvous) and filled from (ID, k); every receiver checks
 * order and every byte.  WHERE is "local" or "remote": the side checks
 * its own rmq_stats -- local: all its messages went by the local path;
 * remote: none did.  A bound side checks that exactly one peer's share
 * went local.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmq.h"

#define BIG  150000 /* past a 512 KiB ring's quarter: rendezvous */
#define HDR  16     /* sender id, sequence number */
#define NSND 2

static char *buf, *want;

static size_t
size_of(uint64_t k)
{
	return k % 16 == 15 ? BIG : HDR + (size_t) (k * 37 % 1000);
}

/* Messages of n a local peer's socket counts on the local path: all of
 * them, the large ones read out of the sender's memory in one copy. */
static uint64_t
local_count(uint64_t n)
{
	return n;
}

static size_t
fill(char *b, uint64_t id, uint64_t k)
{
	size_t   len = size_of(k), i;
	uint64_t x   = id * 1000003u + k;

	memcpy(b, &id, 8);
	memcpy(b + 8, &k, 8);
	for (i = HDR; i < len; i++) {
		x    = x * 6364136223846793005ULL + 1442695040888963407ULL;
		b[i] = (char) (x >> 56);
	}
	return len;
}

/* Message r bytes in buf: the next of its sender (next[id]), intact. */
static int
check(const char *who, ssize_t r, uint64_t *next)
{
	uint64_t id, k;
	size_t   len;

	if (r < HDR) {
		fprintf(stderr, "%s: a %zd-byte message\n", who, r);
		return -1;
	}
	memcpy(&id, buf, 8);
	memcpy(&k, buf + 8, 8);
	if (id >= NSND || k != next[id]) {
		fprintf(stderr, "%s: sender %llu message %llu, wanted %llu\n",
		        who, (unsigned long long) id, (unsigned long long) k,
		        id < NSND ? (unsigned long long) next[id] : 0ULL);
		return -1;
	}
	len = fill(want, id, k);
	if ((size_t) r != len || memcmp(buf, want, len) != 0) {
		fprintf(stderr, "%s: sender %llu message %llu: %zd bytes, "
		        "not the %zu sent\n", who, (unsigned long long) id,
		        (unsigned long long) k, r, len);
		return -1;
	}
	next[id]++;
	return (int) id;
}

static void
opt(rmq_socket *s, int o, int v)
{
	rmq_setopt(s, o, &v, sizeof(v));
}

static void
show(const char *who, const struct rmq_stats *st)
{
	int i;

	printf("%s:", who);
	for (i = 0; i < RMQ_PATH_MAX; i++)
		if (st->sent_msgs[i] + st->recv_msgs[i] > 0)
			printf(" %s %llu/%llu", rmq_path_name(i),
			       (unsigned long long) st->sent_msgs[i],
			       (unsigned long long) st->recv_msgs[i]);
	printf(" (sent/received)\n");
}

static uint64_t
total(const uint64_t *v)
{
	uint64_t t = 0;
	int      i;

	for (i = 0; i < RMQ_PATH_MAX; i++)
		t += v[i];
	return t;
}

/* A bound side: took 2n, exactly one sender's small messages locally. */
static int
bound_check(const char *who, rmq_socket *s, uint64_t n, bool sent)
{
	struct rmq_stats st;
	const uint64_t  *v;
	uint64_t         want_total = n * NSND;

	rmq_stats(s, &st);
	show(who, &st);
	v = sent ? st.sent_msgs : st.recv_msgs;
	if (v[RMQ_PATH_LOCAL] != local_count(n) || total(v) != want_total) {
		fprintf(stderr, "%s: %llu of %llu by the local path; wanted "
		        "%llu of %llu (one peer's small messages)\n", who,
		        (unsigned long long) v[RMQ_PATH_LOCAL],
		        (unsigned long long) total(v),
		        (unsigned long long) local_count(n),
		        (unsigned long long) want_total);
		return 1;
	}
	return 0;
}

static int
peer_check(const char *who, rmq_socket *s, uint64_t n, bool local,
           bool sent, bool recvd)
{
	struct rmq_stats st;
	uint64_t         w = local ? local_count(n) : 0;
	int              bad = 0;

	rmq_stats(s, &st);
	show(who, &st);
	if (sent && st.sent_msgs[RMQ_PATH_LOCAL] != w)
		bad = 1;
	if (recvd && st.recv_msgs[RMQ_PATH_LOCAL] != w)
		bad = 1;
	if (bad)
		fprintf(stderr, "%s: %s peer, but %llu sent and %llu received "
		        "by the local path (wanted %llu)\n", who,
		        local ? "a local" : "a remote",
		        (unsigned long long) st.sent_msgs[RMQ_PATH_LOCAL],
		        (unsigned long long) st.recv_msgs[RMQ_PATH_LOCAL],
		        (unsigned long long) w);
	return bad;
}

static int
serve(const char *mode, rmq_socket *s, uint64_t n)
{
	uint64_t         next[NSND] = { 0 }, k;
	struct rmq_stats st;
	ssize_t          r;
	int              i;

	if (strcmp(mode, "pub") == 0) {
		for (i = 0; i < 3000; i++) { /* both subscribers in */
			rmq_stats(s, &st);
			if (st.peers_connected >= NSND)
				break;
			usleep(10000);
		}
		if (st.peers_connected < NSND) {
			fprintf(stderr, "pub: %llu subscribers\n",
			        (unsigned long long) st.peers_connected);
			return 1;
		}
		usleep(500000); /* their subscriptions, sent at connect */
		for (k = 0; k < n; k++) {
			r = rmq_send(s, buf, fill(buf, 0, k), 0);
			if (r < 0) {
				fprintf(stderr, "pub: send %llu: %s\n",
				        (unsigned long long) k,
				        rmq_strerror((int) r));
				return 1;
			}
		}
		/* Each subscriber took one copy of each: 2n sent, n local. */
		rmq_stats(s, &st);
		show("pub", &st);
		if (st.sent_msgs[RMQ_PATH_LOCAL] != local_count(n)) {
			fprintf(stderr, "pub: %llu by the local path, wanted "
			        "%llu\n", (unsigned long long)
			        st.sent_msgs[RMQ_PATH_LOCAL],
			        (unsigned long long) local_count(n));
			return 1;
		}
		return 0;
	}
	for (k = 0; k < n * NSND; k++) {
		r = rmq_recv(s, buf, BIG, 0);
		if (r < 0) {
			fprintf(stderr, "%s: recv: %s\n", mode,
			        rmq_strerror((int) r));
			return 1;
		}
		if (check(mode, r, next) < 0)
			return 1;
		if (strcmp(mode, "rep") == 0 &&
		    rmq_send(s, buf, (size_t) r, 0) != r) {
			fprintf(stderr, "rep: reply failed\n");
			return 1;
		}
	}
	printf("%s: %llu messages from each of %d peers, in order, every "
	       "byte\n", mode, (unsigned long long) n, NSND);
	if (bound_check(mode, s, n, false))
		return 1;
	return strcmp(mode, "rep") == 0 && bound_check(mode, s, n, true);
}

/* Message k of sender id (a PUB publishes as sender 0, a REP echoes its
 * asker's) next: 0, or 1 and why. */
static int
recv_check(const char *mode, rmq_socket *s, uint64_t id, uint64_t k)
{
	uint64_t next[NSND] = { 0 };
	ssize_t  r;

	next[id] = k;
	r        = rmq_recv(s, buf, BIG, 0);
	if (r >= 0 && check(mode, r, next) >= 0)
		return 0;
	fprintf(stderr, "%s: message %llu: %s\n", mode, (unsigned long long) k,
	        r < 0 ? rmq_strerror((int) r) : "bad");
	return 1;
}

static int
client(const char *mode, rmq_socket *s, uint64_t id, uint64_t n,
       bool local)
{
	uint64_t k;
	ssize_t  r;
	size_t   len;

	for (k = 0; k < n; k++) {
		if (strcmp(mode, "sub") == 0) {
			if (recv_check(mode, s, 0, k) != 0)
				return 1;
			continue;
		}
		len = fill(buf, id, k);
		r   = rmq_send(s, buf, len, 0);
		if (r != (ssize_t) len) {
			fprintf(stderr, "%s: send %llu: %s\n", mode,
			        (unsigned long long) k, rmq_strerror((int) r));
			return 1;
		}
		if (strcmp(mode, "req") == 0 && recv_check(mode, s, id, k) != 0)
			return 1;
	}
	printf("%s %llu: %llu messages, every byte\n", mode,
	       (unsigned long long) id, (unsigned long long) n);
	return peer_check(mode, s, n, local, strcmp(mode, "sub") != 0,
	                  strcmp(mode, "push") != 0);
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *mode;
		int         type;
		bool        binds;
	} modes[] = {
		{ "pull", RMQ_PULL, true }, { "rep", RMQ_REP, true },
		{ "pub", RMQ_PUB, true },   { "push", RMQ_PUSH, false },
		{ "req", RMQ_REQ, false },  { "sub", RMQ_SUB, false },
	};
	rmq_ctx    *ctx;
	rmq_socket *s;
	const char *mode = argc > 3 ? argv[1] : "", *ep = argc > 3 ? argv[2] : "";
	uint64_t    id = 0, n;
	size_t      m;
	bool        local = false;
	int         rc;

	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		if (strcmp(mode, modes[m].mode) == 0)
			break;
	if (m == sizeof(modes) / sizeof(modes[0]) ||
	    (!modes[m].binds && argc != 6)) {
		fprintf(stderr, "usage: mixed pull|rep|pub ENDPOINT N\n"
		        "       mixed push|req|sub ENDPOINT ID N "
		        "local|remote\n");
		return 2;
	}
	if (modes[m].binds) {
		n = strtoull(argv[3], NULL, 10);
	} else {
		id    = strtoull(argv[3], NULL, 10);
		n     = strtoull(argv[4], NULL, 10);
		local = strcmp(argv[5], "local") == 0;
	}
	buf  = malloc(BIG);
	want = malloc(BIG);
	if (buf == NULL || want == NULL || id >= NSND)
		return 2;
	rc = rmq_ctx_new(&ctx, NULL);
	if (rc != 0) {
		fprintf(stderr, "rmq_ctx_new: %s\n", rmq_strerror(rc));
		return 1;
	}
	rc = rmq_socket_open(ctx, modes[m].type, &s);
	if (rc != 0) {
		fprintf(stderr, "rmq_socket_open: %s\n", rmq_strerror(rc));
		return 1;
	}
	opt(s, RMQ_RCVTIMEO, 60000);
	opt(s, RMQ_SNDTIMEO, 60000);
	opt(s, RMQ_CONNECT_TIMEOUT, 30000);
	if (modes[m].type == RMQ_SUB)
		rmq_setopt(s, RMQ_SUBSCRIBE, "", 0);
	/* Every message to both: a PUB that may drop dropped three for the
	 * remote subscriber once, its sends in flight (24 at most) not yet
	 * completed while the local one took them faster.  Dropping is
	 * check_pubsub's to test. */
	if (modes[m].type == RMQ_PUB)
		opt(s, RMQ_NODROP, 1);
	rc = modes[m].binds ? rmq_bind(s, ep) : rmq_connect(s, ep);
	if (rc != 0) {
		fprintf(stderr, "%s %s: %s\n", modes[m].binds ? "bind" :
		        "connect", ep, rmq_strerror(rc));
		return 1;
	}
	rc = modes[m].binds ? serve(mode, s, n) : client(mode, s, id, n, local);
	opt(s, RMQ_LINGER, 5000);
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	free(buf);
	free(want);
	return rc;
}
