/*
 * REQ/REP semantics between real processes: several REQs served by one
 * REP (fair-queued, each gets its own reply; 64 of them on shm, tcp and
 * sockets), one REQ round-robining over several REPs, and the state
 * machine errors.
 */
#include "testutil.h"
#include "checkmain.h"

#define NCLIENTS 3
#define NREQ     50

/* REP: answer "id:n" with "id:n:ok" for *arg requests. */
static int
serve_many(rmq_socket *s, void *arg)
{
	char    buf[64];
	ssize_t n;
	int     i, fails = 0, total = *(int *) arg;

	for (i = 0; i < total; i++) {
		n = rmq_recv(s, buf, sizeof(buf) - 4, 0);
		if (n <= 0) {
			fails++;
			break;
		}
		memcpy(buf + n, ":ok", 3);
		if (rmq_send(s, buf, (size_t) n + 3, 0) != n + 3)
			fails++;
	}
	return fails;
}

/* nclients REQs (at most 64), nreq requests each, on one REP. */
static void
many_clients(const char *prov, int nclients, int nreq)
{
	char   bep[64], ep[256];
	pid_t  server, clients[64];
	int    c, total = nclients * nreq;

	ck_assert_int_le(nclients, 64);
	server = spawn_server(RMQ_REP, bind_addr(prov, bep, sizeof(bep)),
	                      serve_many, &total, ep, sizeof(ep));
	for (c = 0; c < nclients; c++) {
		clients[c] = fork();
		ck_assert_int_ge(clients[c], 0);
		if (clients[c] == 0) {
			rmq_ctx    *ctx;
			rmq_socket *s;
			char        req[32], want[40], got[64];
			ssize_t     n;
			int         i, fails = 0;

			alarm(120);
			int         rc;

			if (rmq_ctx_new(&ctx, NULL) != 0 ||
			    rmq_socket_open(ctx, RMQ_REQ, &s) != 0)
				_exit(90);
			rc = rmq_connect(s, ep);
			if (rc != 0) {
				fprintf(stderr, "client %d: connect: %s\n", c,
				        rmq_strerror(rc));
				_exit(91);
			}
			for (i = 0; i < nreq; i++) {
				snprintf(req, sizeof(req), "%d:%d", c, i);
				snprintf(want, sizeof(want), "%s:ok", req);
				if (rmq_send(s, req, strlen(req), 0) < 0) {
					fails++;
					break;
				}
				n = rmq_recv(s, got, sizeof(got), 0);
				if (n != (ssize_t) strlen(want) ||
				    memcmp(got, want, (size_t) n) != 0)
					fails++;
			}
			rmq_close(s);
			rmq_ctx_destroy(ctx);
			_exit(fails);
		}
	}
	{
		int st[64], sst;

		for (c = 0; c < nclients; c++)
			st[c] = reap(clients[c]);
		sst = reap(server);
		for (c = 0; c < nclients; c++)
			ck_assert_msg(st[c] == 0, "client %d: status %d "
			              "(server %d)", c, st[c], sst);
		ck_assert_int_eq(sst, 0);
	}
}

START_TEST(test_many_req_one_rep_shm)
{
	many_clients("shm", NCLIENTS, NREQ);
}
END_TEST

START_TEST(test_many_req_one_rep_tcp)
{
	many_clients("tcp", NCLIENTS, NREQ);
}
END_TEST

/* REP that answers with its own id, for the round-robin test. */
static int
serve_id(rmq_socket *s, void *arg)
{
	int     id = *(int *) arg, fails = 0;
	char    buf[16];
	ssize_t n;

	for (;;) {
		n = rmq_recv(s, buf, sizeof(buf), 0);
		if (n < 0)
			return 1;
		if (n == 4 && memcmp(buf, "stop", 4) == 0)
			return rmq_send(s, "bye", 3, 0) == 3 ? fails : 1;
		if (rmq_send(s, &id, sizeof(id), 0) != sizeof(id))
			fails++;
	}
}

static void
round_robin(const char *prov)
{
	char        bep[64], ep[3][256], buf[16];
	pid_t       pids[3];
	int         ids[3] = {10, 20, 30}, seen[3] = {0, 0, 0};
	int         i, k, id, prev = -1;
	rmq_ctx    *ctx;
	rmq_socket *s;

	for (i = 0; i < 3; i++)
		pids[i] = spawn_server(RMQ_REP,
		                       bind_addr(prov, bep, sizeof(bep)),
		                       serve_id, &ids[i], ep[i], sizeof(ep[i]));
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_REQ, &s), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(rmq_connect(s, ep[i]), 0);
	for (i = 0; i < 9; i++) {
		ck_assert_int_eq(rmq_send(s, "q", 1, 0), 1);
		ck_assert_int_eq(rmq_recv(s, &id, sizeof(id), 0), sizeof(id));
		ck_assert_int_ne(id, prev); /* never the same REP twice */
		prev = id;
		for (k = 0; k < 3; k++)
			if (ids[k] == id)
				seen[k]++;
	}
	for (k = 0; k < 3; k++)
		ck_assert_int_eq(seen[k], 3);
	/* Each REP gets its own stop. */
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(rmq_send(s, "stop", 4, 0), 4);
		ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 3);
	}
	close_all(ctx, s);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(reap(pids[i]), 0);
}

START_TEST(test_one_req_round_robin_shm)
{
	round_robin("shm");
}
END_TEST

START_TEST(test_one_req_round_robin_tcp)
{
	round_robin("tcp");
}
END_TEST

/* State machine: REP must recv first, REQ must send first. */
START_TEST(test_rep_send_first_is_efsm)
{
	rmq_ctx    *ctx;
	rmq_socket *s;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_REP, &s), 0);
	ck_assert_int_eq(rmq_send(s, "x", 1, 0), -RMQ_EFSM);
	close_all(ctx, s);
}
END_TEST

START_TEST(test_req_recv_first_is_efsm)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	char        c;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_REQ, &s), 0);
	ck_assert_int_eq(rmq_recv(s, &c, 1, 0), -RMQ_EFSM);
	close_all(ctx, s);
}
END_TEST

/* A second send cancels the first request (NNG's REQ): its late reply
 * is dropped, counted; check_reconnect tests it on every provider. */
START_TEST(test_req_send_twice_cancels)
{
	char             bep[64], ep[256], buf[8];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	pid_t            pid;
	int              two = 2;
	struct rmq_stats st;

	pid = spawn_server(RMQ_REP, bind_addr("tcp", bep, sizeof(bep)),
	                   serve_many, &two, ep, sizeof(ep));
	open_connected(RMQ_REQ, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, "a", 1, 0), 1);
	ck_assert_int_eq(rmq_send(s, "b", 1, 0), 1);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 4);
	ck_assert_int_eq(memcmp(buf, "b:ok", 4), 0);
	ck_assert_int_eq(rmq_stats(s, &st), 0);
	ck_assert_uint_eq(st.dropped, 1);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

START_TEST(test_unknown_types_say_so)
{
	static const int types[] = {RMQ_PAIR, RMQ_PUB, RMQ_SUB, RMQ_REQ,
	                            RMQ_REP, RMQ_PUSH, RMQ_PULL};
	rmq_ctx         *ctx;
	rmq_socket      *s = NULL;
	size_t           i;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		ck_assert_int_eq(rmq_socket_open(ctx, types[i], &s), 0);
		ck_assert_int_eq(rmq_close(s), 0);
	}
	s = NULL;
	ck_assert_int_eq(rmq_socket_open(ctx, 12345, &s), -RMQ_EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(rmq_socket_open(ctx, 9, &s), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
}
END_TEST

/* _i: provider.  64 REQs on one REP: each gets its own replies. */
static const char *const provs64[] = {"shm", "tcp", "sockets"};

START_TEST(test_64_req_one_rep)
{
	many_clients(provs64[_i], 64, 10);
}
END_TEST

/* ---- a client that does not read its reply ---- */

#define BIG_REPLY (1u << 20) /* a rendezvous on every provider */

/* REP: a 1 MiB reply to each of two requests. */
static int
serve_big(rmq_socket *s, void *arg)
{
	char   *buf = calloc(1, BIG_REPLY), rq[16];
	int     i, fails = buf == NULL;

	(void) arg;
	for (i = 0; buf != NULL && i < 2; i++) {
		if (rmq_recv(s, rq, sizeof(rq), 0) < 0) {
			fails++;
			break;
		}
		if (rmq_send(s, buf, BIG_REPLY, 0) != (ssize_t) BIG_REPLY)
			fails++;
	}
	free(buf);
	return fails;
}

struct stalled_req {
	char ep[256];
	int  sent; /* shared: its request went */
};

/* A REQ that asks, then stops: it never reads its reply. */
static int
ask_and_stop(void *arg)
{
	struct stalled_req *a = arg;
	rmq_ctx            *ctx;
	rmq_socket         *s;

	if (rmq_ctx_new(&ctx, NULL) != 0 ||
	    rmq_socket_open(ctx, RMQ_REQ, &s) != 0 ||
	    rmq_connect(s, a->ep) != 0 || rmq_send(s, "A", 1, 0) != 1)
		return 1;
	__atomic_store_n(&a->sent, 1, __ATOMIC_RELEASE);
	pause();
	return 0;
}

/*
 * _i: provider.  A client whose large reply is under way stops reading:
 * the REP must still serve the next client.  Its reply was a blocking
 * zero-copy rendezvous that waited for the stopped client's FIN, so the
 * next one waited for ever (27 Nov 2026).
 */
START_TEST(test_rep_client_stops_reading)
{
	struct stalled_req *a = test_shared(sizeof(*a));
	char                bep[64], *buf = malloc(BIG_REPLY);
	rmq_ctx            *ctx;
	rmq_socket         *s;
	pid_t               server, stalled;
	int                 i, tmo = 10000;
	ssize_t             n;

	server = spawn_server_opts(RMQ_REP, bind_addr(provs64[_i], bep,
	                                              sizeof(bep)),
	                           serve_big, NULL, a->ep, sizeof(a->ep), 0,
	                           0);
	stalled = spawn_child(ask_and_stop, a);
	for (i = 0; !__atomic_load_n(&a->sent, __ATOMIC_ACQUIRE) && i < 6000;
	     i++)
		usleep(10000);
	ck_assert_msg(a->sent, "the first client did not send");
	usleep(200000); /* its request first */
	open_connected(RMQ_REQ, a->ep, &ctx, &s);
	ck_assert_int_eq(rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo)), 0);
	ck_assert_int_eq(rmq_send(s, "B", 1, 0), 1);
	n = rmq_recv(s, buf, BIG_REPLY, 0);
	ck_assert_msg(n == (ssize_t) BIG_REPLY, "%s: the next client got %zd "
	              "(%s)", provs64[_i], n, rmq_strerror((int) n));
	close_all(ctx, s);
	kill(stalled, SIGKILL);
	reap(stalled);
	ck_assert_int_eq(reap(server), 0);
	free(buf);
	munmap(a, sizeof(*a));
}
END_TEST

static Suite *
reqrep_suite(void)
{
	Suite *s  = suite_create("reqrep");
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_many_req_one_rep_shm);
	tcase_add_test(tc, test_many_req_one_rep_tcp);
	tcase_add_loop_test(tc, test_64_req_one_rep, 0, 3);
	tcase_add_test(tc, test_one_req_round_robin_shm);
	tcase_add_test(tc, test_one_req_round_robin_tcp);
	tcase_add_test(tc, test_rep_send_first_is_efsm);
	tcase_add_test(tc, test_req_recv_first_is_efsm);
	tcase_add_test(tc, test_req_send_twice_cancels);
	tcase_add_test(tc, test_unknown_types_say_so);
	tcase_add_loop_test(tc, test_rep_client_stops_reading, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(reqrep_suite)
