/*
 * DEALER and ROUTER through the public API, over shm, tcp and sockets:
 * many requests in flight, routing ids (made, set, refused twice),
 * RMQ_ROUTER_MANDATORY both ways, the envelopes with REQ and REP, DEALER
 * round-robin and ROUTER fair-queueing, the pairs that may connect,
 * rmq_poll, and a DEALER killed between the frames of a message.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkmain.h"

#include <check.h>

#include "rmq.h"
#include "testutil.h"

static const char *const provs[] = {"shm", "tcp", "sockets"};
#define NPROVS 3

/* A frame into b (cap bytes); its size, RCVMORE into *more. */
static ssize_t
recv_frame(rmq_socket *s, void *b, size_t cap, int *more)
{
	ssize_t n = rmq_recv(s, b, cap, 0);

	*more = getopt_int(s, RMQ_RCVMORE);
	return n;
}

/* The echo server: every message back to its sender, frame for frame. */
static int
serve_router_echo(rmq_socket *s, void *arg)
{
	uint8_t b[8][5000];
	ssize_t n[8];
	int     k, nf, more, fails = 0, tmo = 20000;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (;;) {
		for (nf = 0, more = 1; more && nf < 8; nf++) {
			n[nf] = recv_frame(s, b[nf], sizeof(b[nf]), &more);
			if (n[nf] < 0)
				return fails + 50;
		}
		if (more)
			return 60;
		if (nf == 2 && n[1] == 3 && memcmp(b[1], "END", 3) == 0)
			break;
		for (k = 0; k < nf; k++)
			if (rmq_send(s, b[k], (size_t) n[k],
			             k + 1 < nf ? RMQ_SNDMORE : 0) != n[k])
				fails++;
	}
	return fails;
}

/*
 * A DEALER with W requests in flight against the ROUTER echo: every
 * reply comes back, whole, its payload its request's.
 */
START_TEST(test_dealer_router_window)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t     b[5000], r[5000];
	uint32_t    id;
	int         w = 64, total = 2000, sent = 0, got = 0, tmo = 20000;
	size_t      len;
	ssize_t     n;
	pid_t       pid;

	pid = spawn_server(RMQ_ROUTER, bind_addr(prov, bep, sizeof(bep)),
	                   serve_router_echo, NULL, ep, sizeof(ep));
	open_connected(RMQ_DEALER, ep, &ctx, &s);
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	while (got < total) {
		while (sent < total && sent - got < w) {
			id  = (uint32_t) sent;
			len = sent % 3 == 0 ? 4096 : 64;
			test_fill(b, len, id);
			memcpy(b, &id, sizeof(id));
			ck_assert_int_eq(rmq_send(s, b, len, 0), (ssize_t) len);
			sent++;
		}
		n = rmq_recv(s, r, sizeof(r), 0);
		ck_assert_msg(n == 64 || n == 4096, "%s: reply of %zd", prov,
		              n);
		ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), 0);
		memcpy(&id, r, sizeof(id));
		ck_assert_uint_lt(id, (uint32_t) sent);
		ck_assert_int_eq(n, id % 3 == 0 ? 4096 : 64);
		memcpy(b, r, 4);
		test_fill(b, (size_t) n, id);
		ck_assert(memcmp(b + 4, r + 4, (size_t) n - 4) == 0);
		got++;
	}
	ck_assert_int_eq(rmq_send(s, "END", 3, 0), 3);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* ---- routing ids ---- */

struct id_child {
	int         fd;     /* the endpoint comes through it */
	int         type;
	const char *rid;    /* NULL: none set */
	int         frames; /* a message of this many frames */
	int         expect; /* the connect's result */
	bool        die;    /* SIGKILL between frames */
	int         replies; /* messages it waits for before it goes */
};

/* A peer of the ROUTER: connect (its id set first), say hello in
 * frames, wait for the reply (or die between frames). */
static int
id_child(void *arg)
{
	struct id_child *c = arg;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	char             ep[EP_LEN], b[64];
	int              k, rc, tmo = 20000;

	if (pipe_get_ep(c->fd, ep, 30000) != 0)
		return 80;
	if (open_socket(c->type, &ctx, &s) != 0)
		return 81;
	if (c->rid != NULL &&
	    rmq_setopt(s, RMQ_ROUTING_ID, c->rid, strlen(c->rid)) != 0)
		return 82;
	rc = rmq_connect(s, ep);
	if (rc != c->expect)
		return 83;
	if (rc != 0)
		goto out;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (k = 0; k < c->frames; k++) {
		snprintf(b, sizeof(b), "frame %d", k);
		if (c->die && k == c->frames - 1) {
			usleep(300 * 1000); /* the others leave */
			raise(SIGKILL);
		}
		if (rmq_send(s, b, strlen(b),
		             k + 1 < c->frames ? RMQ_SNDMORE : 0) !=
		    (ssize_t) strlen(b))
			return 84;
	}
	for (k = 0; k < c->replies; k++)
		if (rmq_recv(s, b, sizeof(b), 0) < 0)
			return 85;
out:
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return 0;
}

/*
 * Ids made for peers that set none are unique and start with a zero
 * byte; a set one is seen as set; a second peer with an id already
 * connected is refused and counted; the ROUTER addresses a peer by id
 * as soon as it counts it, before it sent anything.
 */
START_TEST(test_routing_ids)
{
	const char      *prov = provs[_i];
	enum { NMADE = 8 };
	struct id_child  c[NMADE], a, dup;
	pid_t            pids[NMADE], pa, pd;
	int              pm[2], pfa[2], pfd[2], i, k, more, tmo = 20000;
	uint8_t          ids[NMADE][5];
	char             bep[64], ep[256], b[256];
	size_t           len = sizeof(ep);
	rmq_ctx         *ctx;
	rmq_socket      *r;
	struct rmq_stats stats;
	ssize_t          n;

	ck_assert_int_eq(pipe(pm), 0);
	ck_assert_int_eq(pipe(pfa), 0);
	ck_assert_int_eq(pipe(pfd), 0);
	for (i = 0; i < NMADE; i++) {
		c[i]    = (struct id_child){pm[0], RMQ_DEALER, NULL, 2, 0,
		                            false, 1};
		pids[i] = spawn_child(id_child, &c[i]);
	}
	a   = (struct id_child){pfa[0], RMQ_DEALER, "client-A", 1, 0, false,
	                        2};
	dup = (struct id_child){pfd[0], RMQ_DEALER, "client-A", 1,
	                        -RMQ_EADDRINUSE, false, 0};
	pa  = spawn_child(id_child, &a);
	pd  = spawn_child(id_child, &dup);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_ROUTER, &r), 0);
	ck_assert_int_eq(rmq_bind(r, bind_addr(prov, bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_getopt(r, RMQ_LAST_ENDPOINT, ep, &len), 0);
	rmq_setopt(r, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	/* client-A: addressed by the id it set as soon as it is counted. */
	ck_assert_int_eq(pipe_put_ep(pfa[1], ep), 0);
	for (i = 0; i < 2000 && getopt_int(r, RMQ_NPEERS) < 1; i++)
		usleep(5000);
	ck_assert_int_eq(getopt_int(r, RMQ_NPEERS), 1);
	ck_assert_int_eq(rmq_send(r, "client-A", 8, RMQ_SNDMORE), 8);
	ck_assert_int_eq(rmq_send(r, "first", 5, 0), 5);
	/* Its id again, while it is connected: refused, counted. */
	ck_assert_int_eq(pipe_put_ep(pfd[1], ep), 0);
	ck_assert_int_eq(reap(pd), 0);
	rmq_stats(r, &stats);
	ck_assert_uint_ge(stats.handshake_errors, 1);
	ck_assert_int_eq(getopt_int(r, RMQ_NPEERS), 1);
	n = recv_frame(r, b, sizeof(b), &more);
	ck_assert(n == 8 && memcmp(b, "client-A", 8) == 0 && more);
	ck_assert_int_eq(recv_frame(r, b, sizeof(b), &more), 7);
	ck_assert_int_eq(more, 0);
	ck_assert_int_eq(rmq_send(r, "client-A", 8, RMQ_SNDMORE), 8);
	ck_assert_int_eq(rmq_send(r, "bye", 3, 0), 3);
	ck_assert_int_eq(reap(pa), 0);
	/* The others set none: ids made for them. */
	for (i = 0; i < NMADE; i++)
		ck_assert_int_eq(pipe_put_ep(pm[1], ep), 0);
	for (i = 0; i < NMADE; i++) {
		n = recv_frame(r, b, sizeof(b), &more);
		ck_assert_int_eq(n, 5);
		ck_assert_int_eq(more, 1);
		ck_assert_int_eq(b[0], 0);
		for (k = 0; k < i; k++)
			ck_assert(memcmp(ids[k], b, 5) != 0);
		memcpy(ids[i], b, 5);
		for (k = 0; more; k++)
			ck_assert_int_eq(recv_frame(r, b, sizeof(b), &more),
			                 7);
		ck_assert_int_eq(k, 2);
		ck_assert_int_eq(rmq_send(r, ids[i], 5, RMQ_SNDMORE), 5);
		ck_assert_int_eq(rmq_send(r, "ok", 2, 0), 2);
	}
	for (i = 0; i < NMADE; i++)
		ck_assert_int_eq(reap(pids[i]), 0);
	close_all(ctx, r);
	for (i = 0; i < 2; i++) {
		close(pm[i]);
		close(pfa[i]);
		close(pfd[i]);
	}
}
END_TEST

/* The option's rules, without a peer. */
START_TEST(test_routing_id_option)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t     big[256], got[256];
	size_t      len = sizeof(got);
	char        bep[64];

	memset(big, 'x', sizeof(big));
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_DEALER, &s), 0);
	ck_assert_int_eq(rmq_getopt(s, RMQ_ROUTING_ID, got, &len), 0);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_ROUTING_ID, big, 0), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_ROUTING_ID, big, 256),
	                 -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_ROUTING_ID, "\0ab", 3),
	                 -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_ROUTING_ID, big, 255), 0);
	len = sizeof(got);
	ck_assert_int_eq(rmq_getopt(s, RMQ_ROUTING_ID, got, &len), 0);
	ck_assert_uint_eq(len, 255);
	ck_assert(memcmp(got, big, 255) == 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_ROUTING_ID, "me", 2), 0);
	ck_assert_int_eq(rmq_bind(s, bind_addr("tcp", bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_ROUTING_ID, "you", 3), -RMQ_EFSM);
	len = sizeof(got);
	ck_assert_int_eq(rmq_getopt(s, RMQ_ROUTING_ID, got, &len), 0);
	ck_assert_uint_eq(len, 2);
	ck_assert(memcmp(got, "me", 2) == 0);
	/* ROUTER_MANDATORY is a ROUTER's. */
	ck_assert_int_eq(setopt_int(s, RMQ_ROUTER_MANDATORY, 1), -RMQ_EINVAL);
	close_all(ctx, s);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_ROUTER, &s), 0);
	ck_assert_int_eq(getopt_int(s, RMQ_ROUTER_MANDATORY), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_ROUTER_MANDATORY, 2), -RMQ_EINVAL);
	ck_assert_int_eq(setopt_int(s, RMQ_ROUTER_MANDATORY, 1), 0);
	ck_assert_int_eq(getopt_int(s, RMQ_ROUTER_MANDATORY), 1);
	close_all(ctx, s);
}
END_TEST

/* An id no peer holds: dropped and counted, or -EHOSTUNREACH; the socket
 * goes on serving the peer it has. */
START_TEST(test_router_mandatory)
{
	const char      *prov = provs[_i];
	struct id_child  c;
	int              fds[2], more, tmo = 20000;
	char             bep[64], ep[256], b[64];
	size_t           len = sizeof(ep);
	rmq_ctx         *ctx;
	rmq_socket      *r;
	struct rmq_stats st;
	pid_t            pid;

	ck_assert_int_eq(pipe(fds), 0);
	c   = (struct id_child){fds[0], RMQ_DEALER, "known", 1, 0, false, 1};
	pid = spawn_child(id_child, &c);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_ROUTER, &r), 0);
	ck_assert_int_eq(rmq_bind(r, bind_addr(prov, bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_getopt(r, RMQ_LAST_ENDPOINT, ep, &len), 0);
	rmq_setopt(r, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	ck_assert_int_eq(pipe_put_ep(fds[1], ep), 0);
	ck_assert_int_eq(recv_frame(r, b, sizeof(b), &more), 5);
	ck_assert_int_eq(recv_frame(r, b, sizeof(b), &more), 7);
	ck_assert_int_eq(more, 0);
	/* Default: dropped whole, counted once. */
	rmq_stats(r, &st);
	ck_assert_int_eq(rmq_send(r, "nobody", 6, RMQ_SNDMORE), 6);
	ck_assert_int_eq(rmq_send(r, "a", 1, RMQ_SNDMORE), 1);
	ck_assert_int_eq(rmq_send(r, "b", 1, 0), 1);
	{
		struct rmq_stats st2;

		rmq_stats(r, &st2);
		ck_assert_uint_eq(st2.dropped, st.dropped + 1);
	}
	/* Mandatory: the first frame fails, nothing began. */
	ck_assert_int_eq(setopt_int(r, RMQ_ROUTER_MANDATORY, 1), 0);
	ck_assert_int_eq(rmq_send(r, "nobody", 6, RMQ_SNDMORE),
	                 -RMQ_EHOSTUNREACH);
	ck_assert_int_eq(rmq_send(r, "nobody", 6, RMQ_SNDMORE | RMQ_DONTWAIT),
	                 -RMQ_EHOSTUNREACH);
	/* Still usable: the known peer gets its reply. */
	ck_assert_int_eq(rmq_send(r, "known", 5, RMQ_SNDMORE), 5);
	ck_assert_int_eq(rmq_send(r, "reply", 5, 0), 5);
	ck_assert_int_eq(reap(pid), 0);
	/* It left: a reply to it now fails (mandatory) or drops. */
	for (more = 0; more < 2000 && getopt_int(r, RMQ_NPEERS) > 0; more++)
		usleep(5000);
	ck_assert_int_eq(rmq_send(r, "known", 5, RMQ_SNDMORE),
	                 -RMQ_EHOSTUNREACH);
	ck_assert_int_eq(setopt_int(r, RMQ_ROUTER_MANDATORY, 0), 0);
	ck_assert_int_eq(rmq_send(r, "known", 5, RMQ_SNDMORE), 5);
	ck_assert_int_eq(rmq_send(r, "late", 4, 0), 4);
	close_all(ctx, r);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/* ---- with REQ and REP ---- */

static int
serve_router_for_req(rmq_socket *s, void *arg)
{
	char    id[64], body[64], b[64];
	ssize_t il, bl;
	int     i, more, fails = 0, tmo = 20000;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < 20; i++) {
		il = recv_frame(s, id, sizeof(id), &more);
		if (il <= 0 || !more)
			return 90;
		/* The REQ's envelope: an empty frame, then its request. */
		if (recv_frame(s, b, sizeof(b), &more) != 0 || !more)
			return 91;
		bl = recv_frame(s, body, sizeof(body), &more);
		if (bl < 0 || more)
			return 92;
		snprintf(b, sizeof(b), "re:%.*s", (int) bl, body);
		fails += rmq_send(s, id, (size_t) il, RMQ_SNDMORE) != il;
		fails += rmq_send(s, "", 0, RMQ_SNDMORE) != 0;
		fails += rmq_send(s, b, strlen(b), 0) != (ssize_t) strlen(b);
	}
	return fails;
}

START_TEST(test_req_to_router)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256], b[64], want[64];
	rmq_ctx    *ctx;
	rmq_socket *s;
	int         i, tmo = 20000;
	pid_t       pid;

	pid = spawn_server(RMQ_ROUTER, bind_addr(prov, bep, sizeof(bep)),
	                   serve_router_for_req, NULL, ep, sizeof(ep));
	open_connected(RMQ_REQ, ep, &ctx, &s);
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < 20; i++) {
		snprintf(b, sizeof(b), "q%d", i);
		ck_assert_int_eq(rmq_send(s, b, strlen(b), 0),
		                 (ssize_t) strlen(b));
		snprintf(want, sizeof(want), "re:q%d", i);
		ck_assert_int_eq(rmq_recv(s, b, sizeof(b), 0),
		                 (ssize_t) strlen(want));
		ck_assert(memcmp(b, want, strlen(want)) == 0);
		ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), 0);
	}
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

static int
serve_rep_upper(rmq_socket *s, void *arg)
{
	char    b[64];
	ssize_t n;
	int     i, k, tmo = 20000, fails = 0;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < 20; i++) {
		n = rmq_recv(s, b, sizeof(b), 0);
		/* The DEALER's empty frame did not come. */
		if (n <= 0 || getopt_int(s, RMQ_RCVMORE) != 0)
			return 90;
		for (k = 0; k < n; k++)
			b[k] = (char) (b[k] >= 'a' && b[k] <= 'z' ? b[k] - 32
			                                          : b[k]);
		fails += rmq_send(s, b, (size_t) n, 0) != n;
	}
	return fails;
}

START_TEST(test_dealer_to_rep)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256], b[64], want[64];
	rmq_ctx    *ctx;
	rmq_socket *s;
	int         i, tmo = 20000;
	pid_t       pid;

	pid = spawn_server(RMQ_REP, bind_addr(prov, bep, sizeof(bep)),
	                   serve_rep_upper, NULL, ep, sizeof(ep));
	open_connected(RMQ_DEALER, ep, &ctx, &s);
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	/* Several in flight: a REP answers them in turn. */
	for (i = 0; i < 20; i++) {
		snprintf(b, sizeof(b), "ask%d", i);
		ck_assert_int_eq(rmq_send(s, "", 0, RMQ_SNDMORE), 0);
		ck_assert_int_eq(rmq_send(s, b, strlen(b), 0),
		                 (ssize_t) strlen(b));
	}
	for (i = 0; i < 20; i++) {
		ck_assert_int_eq(rmq_recv(s, b, sizeof(b), 0), 0);
		ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), 1);
		snprintf(want, sizeof(want), "ASK%d", i);
		ck_assert_int_eq(rmq_recv(s, b, sizeof(b), 0),
		                 (ssize_t) strlen(want));
		ck_assert(memcmp(b, want, strlen(want)) == 0);
		ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), 0);
	}
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* ---- spreading ---- */

/* A ROUTER that says who it is in each reply, until none comes for 3 s. */
static int
serve_router_named(rmq_socket *s, void *arg)
{
	int     who = *(int *) arg, more, tmo = 3000, fails = 0;
	char    id[64], b[64];
	ssize_t il;

	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (;;) {
		il = recv_frame(s, id, sizeof(id), &more);
		if (il == -RMQ_EAGAIN)
			break;
		/* [id][x][y] */
		if (il <= 0 || recv_frame(s, b, sizeof(b), &more) != 1 ||
		    !more || recv_frame(s, b, sizeof(b), &more) != 1 || more)
			return 90;
		b[0] = (char) ('0' + who);
		fails += rmq_send(s, id, (size_t) il, RMQ_SNDMORE) != il;
		fails += rmq_send(s, b, 1, 0) != 1;
	}
	return fails;
}

/* A DEALER connected to 4 ROUTERs sends to each in turn, per message. */
START_TEST(test_dealer_round_robin)
{
	const char *prov = provs[_i];
	char        bep[64], ep[4][256], b[64];
	int         who[4] = {0, 1, 2, 3}, count[4] = {0}, i, k, tmo = 20000;
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid[4];

	for (i = 0; i < 4; i++)
		pid[i] = spawn_server(RMQ_ROUTER,
		                      bind_addr(prov, bep, sizeof(bep)),
		                      serve_router_named, &who[i], ep[i],
		                      sizeof(ep[i]));
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_DEALER, &s), 0);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(rmq_connect(s, ep[i]), 0);
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	/* Two frames each: a frame never goes elsewhere than its first. */
	for (i = 0; i < 100; i++) {
		ck_assert_int_eq(rmq_send(s, "x", 1, RMQ_SNDMORE), 1);
		ck_assert_int_eq(rmq_send(s, "y", 1, 0), 1);
	}
	for (i = 0; i < 100; i++) {
		ck_assert_int_eq(rmq_recv(s, b, sizeof(b), 0), 1);
		ck_assert(b[0] >= '0' && b[0] <= '3');
		count[b[0] - '0']++;
	}
	for (k = 0; k < 4; k++)
		ck_assert_msg(count[k] == 25, "%s: ROUTER %d got %d of 100",
		              prov, k, count[k]);
	close_all(ctx, s);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(reap(pid[i]), 0);
}
END_TEST

struct burst_arg {
	int fd, who;
};

/* A DEALER that sends 50 messages of 3 frames as fast as it can. */
static int
dealer_burst(void *arg)
{
	struct burst_arg *a = arg;
	rmq_ctx          *ctx;
	rmq_socket       *s;
	char              b[16];
	int               i, k, rc;

	rc = child_connect(a->fd, RMQ_DEALER, "dealer", &ctx, &s);
	if (rc != 0)
		return rc;
	for (i = 0; i < 50; i++)
		for (k = 0; k < 3; k++) {
			snprintf(b, sizeof(b), "%d:%d:%d", a->who, i, k);
			if (rmq_send(s, b, strlen(b), k < 2 ? RMQ_SNDMORE : 0) <
			    0)
				return 84;
		}
	/* Its messages taken before it goes: its last reply. */
	if (rmq_recv(s, b, sizeof(b), 0) < 0)
		return 85;
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return 0;
}

/*
 * A ROUTER fair-queues 4 DEALERs: with all their messages queued, no
 * DEALER's run of messages is longer than the others' (a message at a
 * time from each), and every message comes whole with its sender's id.
 */
START_TEST(test_router_fair_queue)
{
	const char      *prov = provs[_i];
	struct burst_arg a[4];
	pid_t            pid[4];
	int              fds[2], i, k, w, m, f, more, tmo = 20000, next[4] = {0};
	int              last = -1, run = 0, maxrun = 0;
	char             bep[64], ep[256], id[4][64], b[64];
	ssize_t          il[4] = {0}, n;
	size_t           len = sizeof(ep);
	rmq_ctx         *ctx;
	rmq_socket      *r;

	ck_assert_int_eq(pipe(fds), 0);
	for (i = 0; i < 4; i++) {
		a[i]   = (struct burst_arg){fds[0], i};
		pid[i] = spawn_child(dealer_burst, &a[i]);
	}
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_ROUTER, &r), 0);
	ck_assert_int_eq(rmq_bind(r, bind_addr(prov, bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_getopt(r, RMQ_LAST_ENDPOINT, ep, &len), 0);
	rmq_setopt(r, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pipe_put_ep(fds[1], ep), 0);
	/* Let every DEALER's messages queue up. */
	for (i = 0; i < 2000 && getopt_int(r, RMQ_NPEERS) < 4; i++)
		usleep(5000);
	usleep(500 * 1000);
	for (i = 0; i < 200; i++) {
		n = recv_frame(r, b, sizeof(b), &more);
		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(more, 1);
		for (k = 0; k < 3; k++) {
			char  body[16];
			ssize_t bl = recv_frame(r, body, sizeof(body) - 1, &more);

			ck_assert_int_gt(bl, 0);
			body[bl] = '\0';
			ck_assert_int_eq(sscanf(body, "%d:%d:%d", &w, &m, &f), 3);
			ck_assert_int_eq(f, k);
			ck_assert_int_eq(more, k < 2);
			if (k == 0) {
				ck_assert(w >= 0 && w < 4);
				ck_assert_int_eq(m, next[w]);
				next[w]++;
				if (il[w] == 0) {
					memcpy(id[w], b, (size_t) n);
					il[w] = n;
				}
				ck_assert(n == il[w] &&
				          memcmp(id[w], b, (size_t) n) == 0);
			}
		}
		run    = w == last ? run + 1 : 1;
		last   = w;
		maxrun = run > maxrun ? run : maxrun;
	}
	/* Queued all at once, taken one message from each in turn (a peer
	 * whose messages came later may run alone at first). */
	ck_assert_msg(maxrun <= 3, "%s: a run of %d from one", prov, maxrun);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(next[i], 50);
		ck_assert_int_eq(rmq_send(r, id[i], (size_t) il[i], RMQ_SNDMORE),
		                 il[i]);
		ck_assert_int_eq(rmq_send(r, "done", 4, 0), 4);
	}
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(reap(pid[i]), 0);
	close_all(ctx, r);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/* ---- pairs ---- */

struct pair_case {
	int bind, connect, rc;
};

static const struct pair_case pairs[] = {
	{RMQ_ROUTER, RMQ_DEALER, 0},   {RMQ_DEALER, RMQ_ROUTER, 0},
	{RMQ_REP, RMQ_DEALER, 0},      {RMQ_ROUTER, RMQ_REQ, 0},
	{RMQ_DEALER, RMQ_DEALER, 0},   {RMQ_ROUTER, RMQ_ROUTER, 0},
	{RMQ_REP, RMQ_REQ, 0},         {RMQ_ROUTER, RMQ_REP, -RMQ_EPATTERN},
	{RMQ_DEALER, RMQ_REQ, -RMQ_EPATTERN},
	{RMQ_ROUTER, RMQ_PUSH, -RMQ_EPATTERN},
	{RMQ_DEALER, RMQ_PAIR, -RMQ_EPATTERN},
	{RMQ_PULL, RMQ_DEALER, -RMQ_EPATTERN},
};
#define NPAIRS ((int) (sizeof(pairs) / sizeof(pairs[0])))

static int
serve_nothing(rmq_socket *s, void *arg)
{
	char b[8];
	int  tmo = 3000;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	(void) rmq_recv(s, b, sizeof(b), 0);
	return 0;
}

START_TEST(test_pairs)
{
	const struct pair_case *pc = &pairs[_i];
	char                    bep[64], ep[256];
	rmq_ctx                *ctx;
	rmq_socket             *s;
	int                     rc, tmo = 3000;
	pid_t                   pid;

	pid = spawn_server(pc->bind, bind_addr("tcp", bep, sizeof(bep)),
	                   serve_nothing, NULL, ep, sizeof(ep));
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, pc->connect, &s), 0);
	rmq_setopt(s, RMQ_CONNECT_TIMEOUT, &tmo, sizeof(tmo));
	rc = rmq_connect(s, ep);
	ck_assert_msg(rc == pc->rc, "%d to %d: %s", pc->connect, pc->bind,
	              rmq_strerror(rc));
	close_all(ctx, s);
	kill(pid, SIGKILL);
	(void) reap(pid);
}
END_TEST

/* ---- poll ---- */

START_TEST(test_poll)
{
	const char  *prov = provs[_i];
	char         bep[64], ep[256], b[64];
	rmq_ctx     *ctx;
	rmq_socket  *r, *d;
	rmq_pollitem it[2];
	size_t       len = sizeof(ep);
	ssize_t      il;
	char         id[64];
	int          more;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_ROUTER, &r), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_DEALER, &d), 0);
	ck_assert_int_eq(rmq_bind(r, bind_addr(prov, bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_getopt(r, RMQ_LAST_ENDPOINT, ep, &len), 0);
	ck_assert_int_eq(rmq_connect(d, ep), 0);
	it[0] = (rmq_pollitem){.socket = r, .events = RMQ_POLLIN};
	it[1] = (rmq_pollitem){.socket = d, .events = RMQ_POLLIN | RMQ_POLLOUT};
	ck_assert_int_eq(rmq_poll(it, 2, 5000), 1);
	ck_assert_int_eq(it[0].revents, 0);
	ck_assert_int_eq(it[1].revents, RMQ_POLLOUT);
	ck_assert_int_eq(rmq_send(d, "q", 1, RMQ_SNDMORE), 1);
	ck_assert_int_eq(rmq_send(d, "r", 1, 0), 1);
	it[1].events = RMQ_POLLIN;
	ck_assert_int_eq(rmq_poll(it, 2, 5000), 1);
	ck_assert_int_eq(it[0].revents, RMQ_POLLIN);
	ck_assert(getopt_int(r, RMQ_EVENTS) & RMQ_POLLIN);
	il = rmq_recv(r, id, sizeof(id), RMQ_DONTWAIT);
	ck_assert_int_eq(il, 5);
	/* Frames remain: still readable. */
	ck_assert(getopt_int(r, RMQ_EVENTS) & RMQ_POLLIN);
	ck_assert_int_eq(recv_frame(r, b, sizeof(b), &more), 1);
	ck_assert_int_eq(more, 1);
	ck_assert_int_eq(rmq_poll(it, 1, 0), 1);
	ck_assert_int_eq(recv_frame(r, b, sizeof(b), &more), 1);
	ck_assert_int_eq(more, 0);
	ck_assert_int_eq(getopt_int(r, RMQ_EVENTS) & RMQ_POLLIN, 0);
	ck_assert_int_eq(rmq_send(r, id, (size_t) il, RMQ_SNDMORE), il);
	ck_assert_int_eq(rmq_send(r, "a", 1, 0), 1);
	ck_assert_int_eq(rmq_poll(&it[1], 1, 5000), 1);
	ck_assert_int_eq(it[1].revents, RMQ_POLLIN);
	ck_assert_int_eq(rmq_recv(d, b, sizeof(b), 0), 1);
	ck_assert_int_eq(rmq_close(d), 0);
	ck_assert_int_eq(rmq_close(r), 0);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
}
END_TEST

/* ---- faults ---- */

/*
 * A DEALER killed between the frames of a message costs only itself: the
 * ROUTER takes its first message whole, never a frame of the second, and
 * serves the next DEALER.
 */
START_TEST(test_dealer_killed_between_frames)
{
	const char      *prov = provs[_i];
	struct id_child  dying, live;
	int              fds[2], lfd[2], more, st, tmo = 20000;
	char             bep[64], ep[256], b[64];
	size_t           len = sizeof(ep);
	rmq_ctx         *ctx;
	rmq_socket      *r;
	pid_t            dp, lp;
	ssize_t          n;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(pipe(lfd), 0);
	dying = (struct id_child){fds[0], RMQ_DEALER, "dies", 3, 0, true, 0};
	live  = (struct id_child){lfd[0], RMQ_DEALER, "lives", 2, 0, false, 1};
	dp = spawn_child(id_child, &dying);
	lp = spawn_child(id_child, &live);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_ROUTER, &r), 0);
	ck_assert_int_eq(rmq_bind(r, bind_addr(prov, bep, sizeof(bep))), 0);
	ck_assert_int_eq(rmq_getopt(r, RMQ_LAST_ENDPOINT, ep, &len), 0);
	rmq_setopt(r, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	ck_assert_int_eq(pipe_put_ep(fds[1], ep), 0);
	ck_assert_int_eq(waitpid(dp, &st, 0), dp);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	shm_leftovers(dp);
	ck_assert_int_eq(pipe_put_ep(lfd[1], ep), 0);
	n = recv_frame(r, b, sizeof(b), &more);
	ck_assert_msg(n == 5 && memcmp(b, "lives", 5) == 0,
	              "%s: a frame of the dead DEALER's message came", prov);
	ck_assert_int_eq(recv_frame(r, b, sizeof(b), &more), 7);
	ck_assert_int_eq(recv_frame(r, b, sizeof(b), &more), 7);
	ck_assert_int_eq(more, 0);
	ck_assert_int_eq(rmq_send(r, "lives", 5, RMQ_SNDMORE), 5);
	ck_assert_int_eq(rmq_send(r, "ok", 2, 0), 2);
	ck_assert_int_eq(reap(lp), 0);
	ck_assert_int_eq(rmq_recv(r, b, sizeof(b), RMQ_DONTWAIT), -RMQ_EAGAIN);
	close_all(ctx, r);
	close(fds[0]);
	close(fds[1]);
	close(lfd[0]);
	close(lfd[1]);
}
END_TEST

/* A ROUTER that answers n requests on ep, then dies (SIGKILL). */
struct restart_arg {
	char ep[256];
	int  fd; /* the bound endpoint goes out through it */
	int  n;
};

static int
router_then_die(void *arg)
{
	struct restart_arg *a = arg;
	rmq_ctx            *ctx;
	rmq_socket         *r;
	char                id[64], b[64], ep[256];
	size_t              len = sizeof(ep);
	ssize_t             il, bl;
	int                 i, more, tmo = 20000;

	if (open_socket(RMQ_ROUTER, &ctx, &r) != 0 || rmq_bind(r, a->ep) != 0)
		return 80;
	rmq_getopt(r, RMQ_LAST_ENDPOINT, ep, &len);
	if (pipe_put_ep(a->fd, ep) != 0)
		return 81;
	rmq_setopt(r, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < a->n; i++) {
		il = recv_frame(r, id, sizeof(id), &more);
		bl = recv_frame(r, b, sizeof(b), &more);
		if (il <= 0 || bl < 0 || more)
			return 82;
		if (rmq_send(r, id, (size_t) il, RMQ_SNDMORE) != il ||
		    rmq_send(r, b, (size_t) bl, 0) != bl)
			return 83;
	}
	usleep(100 * 1000); /* its last reply leaves */
	raise(SIGKILL);
	return 84;
}

/*
 * A ROUTER killed and started again on the same endpoint: its DEALER
 * connects again by itself (RMQ_RECONNECT_IVL) and is served; what was
 * in flight at the crash is lost with the ROUTER, nothing else.
 */
START_TEST(test_router_restart)
{
	const char        *prov = provs[_i];
	struct restart_arg a1, a2;
	int                fds[2], i, ivl = 50, tmo = 20000, st;
	char               ep[EP_LEN], ep2[EP_LEN], b[64], want[64];
	rmq_ctx           *ctx;
	rmq_socket        *d;
	pid_t              p1, p2;

	ck_assert_int_eq(pipe(fds), 0);
	a1 = (struct restart_arg){"", fds[1], 5};
	bind_addr(prov, a1.ep, sizeof(a1.ep));
	p1 = spawn_child(router_then_die, &a1);
	ck_assert_int_eq(pipe_get_ep(fds[0], ep, 30000), 0);
	ck_assert_int_eq(open_socket(RMQ_DEALER, &ctx, &d), 0);
	ck_assert_int_eq(setopt_int(d, RMQ_RECONNECT_IVL, ivl), 0);
	rmq_setopt(d, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	rmq_setopt(d, RMQ_SNDTIMEO, &tmo, sizeof(tmo));
	ck_assert_int_eq(rmq_connect(d, ep), 0);
	for (i = 0; i < 5; i++) {
		snprintf(b, sizeof(b), "one %d", i);
		ck_assert_int_eq(rmq_send(d, b, strlen(b), 0),
		                 (ssize_t) strlen(b));
		ck_assert_int_eq(rmq_recv(d, want, sizeof(want), 0),
		                 (ssize_t) strlen(b));
	}
	ck_assert_int_eq(waitpid(p1, &st, 0), p1);
	ck_assert(WIFSIGNALED(st));
	shm_leftovers(p1);
	/* The same endpoint again (its port or name, now known). */
	a2 = (struct restart_arg){"", fds[1], 5};
	snprintf(a2.ep, sizeof(a2.ep), "%s", ep);
	p2 = spawn_child(router_then_die, &a2);
	ck_assert_int_eq(pipe_get_ep(fds[0], ep2, 30000), 0);
	ck_assert_str_eq(ep2, ep);
	for (i = 0; i < 5; i++) {
		snprintf(b, sizeof(b), "two %d", i);
		ck_assert_int_eq(rmq_send(d, b, strlen(b), 0),
		                 (ssize_t) strlen(b));
		ck_assert_int_eq(rmq_recv(d, want, sizeof(want), 0),
		                 (ssize_t) strlen(b));
		ck_assert(memcmp(want, b, strlen(b)) == 0);
	}
	ck_assert_int_eq(waitpid(p2, &st, 0), p2);
	shm_leftovers(p2);
	close_all(ctx, d);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

static Suite *
rpc_suite(void)
{
	Suite *su = suite_create("rpc");
	TCase *tc = tcase_create("rpc");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_dealer_router_window, 0, NPROVS);
	tcase_add_loop_test(tc, test_routing_ids, 0, NPROVS);
	tcase_add_test(tc, test_routing_id_option);
	tcase_add_loop_test(tc, test_router_mandatory, 0, NPROVS);
	tcase_add_loop_test(tc, test_req_to_router, 0, NPROVS);
	tcase_add_loop_test(tc, test_dealer_to_rep, 0, NPROVS);
	tcase_add_loop_test(tc, test_dealer_round_robin, 0, NPROVS);
	tcase_add_loop_test(tc, test_router_fair_queue, 0, NPROVS);
	tcase_add_loop_test(tc, test_pairs, 0, NPAIRS);
	tcase_add_loop_test(tc, test_poll, 0, NPROVS);
	tcase_add_loop_test(tc, test_dealer_killed_between_frames, 0, NPROVS);
	tcase_add_loop_test(tc, test_router_restart, 0, NPROVS);
	suite_add_tcase(su, tc);
	return su;
}

RMQ_CHECK_MAIN(rpc_suite)
