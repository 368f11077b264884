/*
 * Messages of several frames (RMQ_SNDMORE, RMQ_RCVMORE) through the public
 * API, over shm, tcp and sockets: boundaries and order kept, a message
 * delivered whole or not at all, never interleaved with another, on every
 * pattern; RMQ_MAXMSGSIZE on a message's total; a sender killed between
 * frames costs only itself; rmq_poll and RMQ_EVENTS while frames remain.
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

#define FRAME_MAX (3 * MiB)

/* A message's frames: their count and sizes. */
struct shape {
	int    n;
	size_t len[100];
};

static void
shapes(struct shape *sh, int *nsh)
{
	int i;

	memset(sh, 0, 4 * sizeof(*sh));
	sh[0].n      = 1; /* one empty frame */
	sh[1].n      = 3; /* small, empty, past every eager limit */
	sh[1].len[0] = 5;
	sh[1].len[2] = 70 * 1024;
	sh[2].n      = 100; /* many, mixed */
	for (i = 0; i < 100; i++)
		sh[2].len[i] = (size_t) (i * 37) % 4500;
	sh[3].n      = 2; /* rendezvous both */
	sh[3].len[0] = MiB;
	sh[3].len[1] = FRAME_MAX;
	*nsh         = 4;
}

/* Frame k of message m: a pattern that says which it is. */
static uint64_t
seed_of(int m, int k)
{
	return (uint64_t) m * 1000 + (uint64_t) k + 1;
}

static int
send_frames(rmq_socket *s, const struct shape *sh, int m, uint8_t *b)
{
	int     k;
	ssize_t n;

	for (k = 0; k < sh->n; k++) {
		test_fill(b, sh->len[k], seed_of(m, k));
		n = rmq_send(s, b, sh->len[k], k + 1 < sh->n ? RMQ_SNDMORE : 0);
		if (n != (ssize_t) sh->len[k])
			return n < 0 ? (int) n : -1;
	}
	return 0;
}

/* Take a message whole: its frames into b (one after another), their
 * sizes into len; returns the frame count or -error. */
static int
recv_frames(rmq_socket *s, uint8_t *b, size_t cap, size_t *len, int max)
{
	size_t  at = 0;
	ssize_t n;
	int     k = 0, more = 1;

	while (more) {
		if (k == max)
			return -1000;
		n = rmq_recv(s, b + at, cap - at, 0);
		if (n < 0)
			return (int) n;
		len[k++] = (size_t) n;
		at += (size_t) n;
		more = getopt_int(s, RMQ_RCVMORE);
		if (more != 0 && more != 1)
			return -1001;
	}
	return k;
}

/* The echo server: each message back, frame for frame. */
static int
serve_echo(rmq_socket *s, void *arg)
{
	uint8_t *b = malloc(4 * FRAME_MAX);
	size_t   len[128], at;
	int      k, n, fails = 0, tmo = 20000;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (;;) {
		n = recv_frames(s, b, 4 * FRAME_MAX, len, 128);
		if (n < 0) {
			fprintf(stderr, "serve_echo: %d\n", n);
			fails++;
			break;
		}
		if (n == 1 && len[0] == 3 && memcmp(b, "END", 3) == 0)
			break;
		for (at = 0, k = 0; k < n; at += len[k++])
			if (rmq_send(s, b + at, len[k],
			             k + 1 < n ? RMQ_SNDMORE : 0) !=
			    (ssize_t) len[k])
				fails++;
	}
	free(b);
	return fails;
}

START_TEST(test_pair_frames)
{
	const char  *prov = provs[_i];
	char         bep[64], ep[256];
	rmq_ctx     *ctx;
	rmq_socket  *s;
	struct shape sh[4];
	uint8_t     *sb = malloc(FRAME_MAX), *rb = malloc(4 * FRAME_MAX);
	size_t       len[128], at;
	int          nsh, i, k, n, r, tmo = 20000;
	pid_t        pid;

	ck_assert(sb != NULL && rb != NULL);
	shapes(sh, &nsh);
	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_echo, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (r = 0; r < 3; r++) {
		for (i = 0; i < nsh; i++) {
			ck_assert_int_eq(send_frames(s, &sh[i], i, sb), 0);
			n = recv_frames(s, rb, 4 * FRAME_MAX, len, 128);
			ck_assert_msg(n == sh[i].n, "%s: %d frames back, not %d",
			              prov, n, sh[i].n);
			ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), 0);
			for (at = 0, k = 0; k < n; at += len[k++]) {
				ck_assert_uint_eq(len[k], sh[i].len[k]);
				ck_assert_uint_eq(test_check(rb + at, len[k],
				                             seed_of(i, k)),
				                  len[k]);
			}
		}
	}
	ck_assert_int_eq(rmq_send(s, "END", 3, 0), 3);
	close_all(ctx, s);
	free(sb);
	free(rb);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/*
 * PUSH/PULL: three pushers send messages of 7 frames each, tagged (who,
 * message, frame); the puller finds every message whole and in order per
 * pusher, never a frame of another inside one.
 */
#define PUSHERS 3
#define PMSGS   200
#define PFRAMES 7

struct tag {
	uint32_t who, msg, frame, n;
};

/* A socket's bound endpoint. */
static void
endpoint_of(rmq_socket *s, char *ep, size_t cap)
{
	size_t len = cap;

	memset(ep, 0, cap);
	ck_assert_int_eq(rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len), 0);
}

/* The children: forked before the test's first librmq call (testutil.h),
 * each told the endpoint through its pipe. */
struct pusher_arg {
	int fd, who;
};

static int
pusher(void *arg)
{
	struct pusher_arg *a = arg;
	rmq_ctx           *ctx;
	rmq_socket        *s;
	uint8_t            b[6000];
	struct tag         t;
	int                m, k, fails = 0, who = a->who, rc;
	size_t             len;

	rc = child_connect(a->fd, RMQ_PUSH, "pusher", &ctx, &s);
	if (rc != 0)
		return rc;
	for (m = 0; m < PMSGS; m++)
		for (k = 0; k < PFRAMES; k++) {
			t   = (struct tag){(uint32_t) who, (uint32_t) m,
			                   (uint32_t) k, PFRAMES};
			len = sizeof(t) + (size_t) ((m * 131 + k * 997) % 5000);
			memset(b, 0x5a, len);
			memcpy(b, &t, sizeof(t));
			if (rmq_send(s, b, len,
			             k + 1 < PFRAMES ? RMQ_SNDMORE : 0) !=
			    (ssize_t) len)
				fails++;
		}
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return fails;
}

START_TEST(test_pushpull_atomic)
{
	const char  *prov = provs[_i];
	char         bep[64], ep[256];
	rmq_ctx     *ctx;
	rmq_socket  *s;
	uint8_t      b[6000];
	struct tag   t;
	int          next[PUSHERS] = {0}, st[PUSHERS], i, k, more, tmo = 20000;
	int          pfd[2];
	struct pusher_arg a[PUSHERS];
	pid_t        pids[PUSHERS];
	ssize_t      n;

	ck_assert_int_eq(pipe(pfd), 0);
	for (i = 0; i < PUSHERS; i++) {
		a[i]    = (struct pusher_arg){pfd[0], i};
		pids[i] = spawn_child(pusher, &a[i]);
	}
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PULL, &s), 0);
	ck_assert_int_eq(rmq_bind(s, bind_addr(prov, bep, sizeof(bep))), 0);
	endpoint_of(s, ep, sizeof(ep));
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < PUSHERS; i++)
		ck_assert_int_eq(pipe_put_ep(pfd[1], ep), 0);
	for (i = 0; i < PUSHERS * PMSGS; i++) {
		for (k = 0, more = 1; more; k++) {
			n = rmq_recv(s, b, sizeof(b), 0);
			ck_assert_msg(n >= (ssize_t) sizeof(t), "%s: recv %zd",
			              prov, n);
			memcpy(&t, b, sizeof(t));
			more = getopt_int(s, RMQ_RCVMORE);
			ck_assert_msg(t.frame == (uint32_t) k && t.who < PUSHERS,
			              "%s: frame %u of %u's message %u where "
			              "frame %d was due", prov, t.frame, t.who,
			              t.msg, k);
			if (k == 0) {
				ck_assert_uint_eq(t.msg, next[t.who]);
				next[t.who]++;
			}
			ck_assert_int_eq(more, k + 1 < PFRAMES);
		}
	}
	for (i = 0; i < PUSHERS; i++)
		st[i] = reap(pids[i]);
	for (i = 0; i < PUSHERS; i++)
		ck_assert_int_eq(st[i], 0);
	close_all(ctx, s);
	close(pfd[0]);
	close(pfd[1]);
}
END_TEST

/* REQ/REP: a request of three frames, the reply its frames in reverse. */
static int
serve_reverse(rmq_socket *s, void *arg)
{
	uint8_t b[3][256];
	ssize_t n[3];
	int     i, k, fails = 0, tmo = 20000;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < 50; i++) {
		for (k = 0; k < 3; k++) {
			n[k] = rmq_recv(s, b[k], sizeof(b[k]), 0);
			if (n[k] < 0 ||
			    getopt_int(s, RMQ_RCVMORE) != (k < 2))
				return 90;
		}
		for (k = 2; k >= 0; k--)
			if (rmq_send(s, b[k], (size_t) n[k],
			             k > 0 ? RMQ_SNDMORE : 0) != n[k])
				fails++;
	}
	return fails;
}

START_TEST(test_reqrep_frames)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256], b[64];
	rmq_ctx    *ctx;
	rmq_socket *s;
	const char *req[3] = {"alpha", "", "gamma-gamma"};
	int         i, k, tmo = 20000;
	ssize_t     n;
	pid_t       pid;

	pid = spawn_server(RMQ_REP, bind_addr(prov, bep, sizeof(bep)),
	                   serve_reverse, NULL, ep, sizeof(ep));
	open_connected(RMQ_REQ, ep, &ctx, &s);
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < 50; i++) {
		for (k = 0; k < 3; k++)
			ck_assert_int_eq(rmq_send(s, req[k], strlen(req[k]),
			                          k < 2 ? RMQ_SNDMORE : 0),
			                 (ssize_t) strlen(req[k]));
		for (k = 2; k >= 0; k--) {
			n = rmq_recv(s, b, sizeof(b), 0);
			ck_assert_int_eq(n, (ssize_t) strlen(req[k]));
			ck_assert(memcmp(b, req[k], (size_t) n) == 0);
			ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), k > 0);
		}
	}
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* PUB/SUB: a subscription matches the first frame; the rest follow it. */
START_TEST(test_pubsub_frames)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256], b[64];
	rmq_ctx    *pctx, *sctx;
	rmq_socket *pub, *sub;
	int         i, k, tmo = 5000;
	ssize_t     n;

	ck_assert_int_eq(rmq_ctx_new(&pctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(pctx, RMQ_PUB, &pub), 0);
	ck_assert_int_eq(rmq_bind(pub, bind_addr(prov, bep, sizeof(bep))), 0);
	endpoint_of(pub, ep, sizeof(ep));
	open_connected(RMQ_SUB, ep, &sctx, &sub);
	ck_assert_int_eq(rmq_setopt(sub, RMQ_SUBSCRIBE, "A", 1), 0);
	rmq_setopt(sub, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < 40; i++) {
		/* "B" matches nothing; its body would start with an "A". */
		ck_assert_int_eq(rmq_send(pub, i % 2 ? "B" : "A", 1,
		                          RMQ_SNDMORE), 1);
		snprintf(b, sizeof(b), "A body %d", i);
		ck_assert_int_eq(rmq_send(pub, b, strlen(b), RMQ_SNDMORE),
		                 (ssize_t) strlen(b));
		ck_assert_int_eq(rmq_send(pub, "end", 3, 0), 3);
	}
	for (i = 0; i < 40; i += 2) {
		for (k = 0; k < 3; k++) {
			n = rmq_recv(sub, b, sizeof(b) - 1, 0);
			ck_assert_int_ge(n, 0);
			b[n] = '\0';
			ck_assert_int_eq(getopt_int(sub, RMQ_RCVMORE), k < 2);
			if (k == 0)
				ck_assert_str_eq(b, "A");
			if (k == 1) {
				char want[32];

				snprintf(want, sizeof(want), "A body %d", i);
				ck_assert_str_eq(b, want);
			}
			if (k == 2)
				ck_assert_str_eq(b, "end");
		}
	}
	n = rmq_recv(sub, b, sizeof(b), RMQ_DONTWAIT);
	ck_assert_int_eq(n, -RMQ_EAGAIN);
	close_all(sctx, sub);
	close_all(pctx, pub);
}
END_TEST

/*
 * A subscriber that falls behind a publisher that does not wait for it
 * misses messages, never part of one: every message it takes has its
 * three frames, of the same message, and they come in order.  (With
 * RMQ_FANOUT_LOG=1 the log's entries are rewritten under the reader.)
 */
#define OV_MSGS 20000

struct ov_frame {
	uint32_t msg, frame;
};

static int
ov_publisher(void *arg)
{
	int             *fd = arg;
	rmq_ctx         *ctx;
	rmq_socket      *pub;
	char             ep[EP_LEN];
	uint8_t          b[3000];
	struct ov_frame  f;
	size_t           len = sizeof(ep);
	int              m, k, go, fails = 0;

	if (open_socket(RMQ_PUB, &ctx, &pub) != 0 ||
	    rmq_bind(pub, bind_addr(provs[fd[2]], ep, sizeof(ep))) != 0)
		return 80;
	rmq_getopt(pub, RMQ_LAST_ENDPOINT, ep, &len);
	if (pipe_put_ep(fd[1], ep) != 0 || pipe_get(fd[0], &go, 30000) != 0)
		return 81;
	for (m = 0; m < OV_MSGS; m++)
		for (k = 0; k < 3; k++) {
			f = (struct ov_frame){(uint32_t) m, (uint32_t) k};
			memset(b, (int) (m + k), sizeof(b));
			memcpy(b, &f, sizeof(f));
			len = k == 1 ? sizeof(b) : sizeof(f);
			if (rmq_send(pub, b, len, k < 2 ? RMQ_SNDMORE : 0) !=
			    (ssize_t) len)
				fails++;
		}
	if (pipe_get(fd[0], &go, 60000) != 0)
		fails++;
	rmq_close(pub);
	rmq_ctx_destroy(ctx);
	return fails;
}

START_TEST(test_pubsub_behind)
{
	rmq_ctx        *ctx;
	rmq_socket     *sub;
	char            ep[EP_LEN];
	uint8_t         b[4000];
	struct ov_frame f;
	int             fd[3], up[2], down[2], k, got = 0, hwm = 8, tmo = 2000;
	int64_t         last = -1;
	ssize_t         n;
	pid_t           pid;

	ck_assert_int_eq(pipe(up), 0);
	ck_assert_int_eq(pipe(down), 0);
	fd[0] = down[0];
	fd[1] = up[1];
	fd[2] = _i;
	pid   = spawn_child(ov_publisher, fd);
	ck_assert_int_eq(pipe_get_ep(up[0], ep, 30000), 0);
	ck_assert_int_eq(open_socket(RMQ_SUB, &ctx, &sub), 0);
	ck_assert_int_eq(setopt_int(sub, RMQ_RCVHWM, hwm), 0);
	ck_assert_int_eq(rmq_connect(sub, ep), 0);
	ck_assert_int_eq(rmq_setopt(sub, RMQ_SUBSCRIBE, "", 0), 0);
	rmq_setopt(sub, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	ck_assert_int_eq(pipe_put(down[1], 1), 0);
	for (;;) {
		for (k = 0; k < 3; k++) {
			n = rmq_recv(sub, b, sizeof(b), 0);
			if (n == -RMQ_EAGAIN && k == 0)
				break;
			ck_assert_int_ge(n, (ssize_t) sizeof(f));
			memcpy(&f, b, sizeof(f));
			ck_assert_int_eq(f.frame, k);
			if (k == 0) {
				ck_assert_int_gt((int64_t) f.msg, last);
				last = f.msg;
			}
			ck_assert_int_eq(f.msg, last);
			ck_assert_int_eq(n, k == 1 ? 3000 : (ssize_t) sizeof(f));
			ck_assert_int_eq(getopt_int(sub, RMQ_RCVMORE), k < 2);
		}
		if (k == 0)
			break;
		if (++got % 64 == 0)
			usleep(2000); /* fall behind */
	}
	ck_assert_int_gt(got, 0);
	ck_assert_int_eq(pipe_put(down[1], 1), 0);
	close_all(ctx, sub);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* RMQ_MAXMSGSIZE holds a message's frames together: too large in all, it
 * goes whole; the next one comes. */
static int
serve_maxmsg(rmq_socket *s, void *arg)
{
	static const size_t want[2] = {300, 300};
	struct rmq_stats    st;
	uint8_t             b[2048];
	size_t              len[16];
	int                 i, k, n, fails = 0, tmo = 20000;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < 2; i++) {
		n = recv_frames(s, b, sizeof(b), len, 16);
		fails += n != (i == 0 ? 2 : 10);
		for (k = 0; k < n; k++)
			fails += len[k] != (i == 0 ? want[k] : 90);
	}
	rmq_stats(s, &st);
	fails += st.dropped != 1; /* [600, 600], once */
	if (rmq_send(s, "ok", 2, 0) != 2)
		fails++;
	return fails;
}

START_TEST(test_maxmsg_total)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256], b[1200];
	rmq_ctx    *ctx;
	rmq_socket *s;
	int         k, tmo = 20000;
	pid_t       pid;

	memset(b, 7, sizeof(b));
	pid = spawn_server_opts(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                        serve_maxmsg, NULL, ep, sizeof(ep), 0, 1000);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	/* 1200 in all: dropped whole by the receiver; in one frame, refused
	 * by the sender, which knows the receiver's limit. */
	ck_assert_int_eq(rmq_send(s, b, 600, RMQ_SNDMORE), 600);
	ck_assert_int_eq(rmq_send(s, b, 600, 0), 600);
	ck_assert_int_eq(rmq_send(s, b, 300, RMQ_SNDMORE), 300);
	ck_assert_int_eq(rmq_send(s, b, 300, 0), 300);
	ck_assert_int_eq(rmq_send(s, b, 1200, 0), -RMQ_EMSGSIZE);
	for (k = 0; k < 10; k++)
		ck_assert_int_eq(rmq_send(s, b, 90, k < 9 ? RMQ_SNDMORE : 0),
		                 90);
	ck_assert_int_eq(rmq_recv(s, b, sizeof(b), 0), 2);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* A pusher that sends one whole message, then dies between two frames of
 * the next (after a pause in which they leave): the puller takes the
 * first, never a frame of the second, and the others' messages whole. */
static int
dying_pusher(void *arg)
{
	struct pusher_arg *a = arg;
	rmq_ctx           *ctx;
	rmq_socket        *s;
	struct tag         t = {(uint32_t) a->who, 0, 0, 2};
	int                rc;

	rc = child_connect(a->fd, RMQ_PUSH, "dying pusher", &ctx, &s);
	if (rc != 0)
		return rc;
	if (rmq_send(s, &t, sizeof(t), RMQ_SNDMORE) != sizeof(t))
		return 83;
	t.frame = 1;
	if (rmq_send(s, &t, sizeof(t), 0) != sizeof(t))
		return 84;
	t = (struct tag){(uint32_t) a->who, 1, 0, 3};
	(void) rmq_send(s, &t, sizeof(t), RMQ_SNDMORE);
	t.frame = 1;
	(void) rmq_send(s, &t, sizeof(t), RMQ_SNDMORE);
	usleep(300 * 1000);
	raise(SIGKILL);
	return 85;
}

START_TEST(test_killed_between_frames)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t     b[6000];
	struct tag  t;
	int         i, k, more, tmo = 20000, st, dfd[2], lfd[2];
	struct pusher_arg da, la;
	pid_t       dead, live;
	ssize_t     n;

	ck_assert_int_eq(pipe(dfd), 0);
	ck_assert_int_eq(pipe(lfd), 0);
	da   = (struct pusher_arg){dfd[0], 7};
	la   = (struct pusher_arg){lfd[0], 0};
	dead = spawn_child(dying_pusher, &da);
	live = spawn_child(pusher, &la);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PULL, &s), 0);
	ck_assert_int_eq(rmq_bind(s, bind_addr(prov, bep, sizeof(bep))), 0);
	endpoint_of(s, ep, sizeof(ep));
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	ck_assert_int_eq(pipe_put_ep(dfd[1], ep), 0);
	/* Its whole message. */
	for (k = 0; k < 2; k++) {
		n = rmq_recv(s, b, sizeof(b), 0);
		ck_assert_int_eq(n, (ssize_t) sizeof(t));
		memcpy(&t, b, sizeof(t));
		ck_assert(t.who == 7 && t.msg == 0 && t.frame == (uint32_t) k);
		ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), k == 0);
	}
	ck_assert_int_eq(waitpid(dead, &st, 0), dead);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	shm_leftovers(dead);
	ck_assert_int_eq(pipe_put_ep(lfd[1], ep), 0);
	for (i = 0; i < PMSGS; i++)
		for (k = 0, more = 1; more; k++) {
			n = rmq_recv(s, b, sizeof(b), 0);
			ck_assert_msg(n >= (ssize_t) sizeof(t), "%s: recv %zd",
			              prov, n);
			memcpy(&t, b, sizeof(t));
			more = getopt_int(s, RMQ_RCVMORE);
			ck_assert_msg(t.who == 0, "%s: a frame of the dead "
			              "pusher's message came", prov);
			ck_assert_int_eq(t.frame, k);
		}
	ck_assert_int_eq(reap(live), 0);
	n = rmq_recv(s, b, sizeof(b), RMQ_DONTWAIT);
	ck_assert_int_eq(n, -RMQ_EAGAIN);
	close_all(ctx, s);
	close(dfd[0]);
	close(dfd[1]);
	close(lfd[0]);
	close(lfd[1]);
}
END_TEST

/* While frames of a message remain, the socket is readable; RCVMORE is
 * the same whether a frame was cut short or not. */
static int
serve_three(rmq_socket *s, void *arg)
{
	char b[16];
	int  tmo = 20000;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	if (rmq_recv(s, b, sizeof(b), 0) != 2)
		return 90;
	if (rmq_send(s, "first-frame", 11, RMQ_SNDMORE) != 11 ||
	    rmq_send(s, "second", 6, RMQ_SNDMORE) != 6 ||
	    rmq_send(s, "3", 1, 0) != 1)
		return 91;
	return rmq_recv(s, b, sizeof(b), 0) == 2 ? 0 : 92;
}

START_TEST(test_poll_while_frames_remain)
{
	const char  *prov = provs[_i];
	char         bep[64], ep[256], b[4];
	rmq_ctx     *ctx;
	rmq_socket  *s;
	rmq_pollitem it;
	int          k;
	pid_t        pid;

	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_three, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, "go", 2, 0), 2);
	it = (rmq_pollitem){.socket = s, .events = RMQ_POLLIN};
	ck_assert_int_eq(rmq_poll(&it, 1, 20000), 1);
	ck_assert_int_eq(rmq_recv(s, b, 2, 0), 11); /* cut to 2 bytes */
	ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), 1);
	for (k = 0; k < 2; k++) {
		it.revents = 0;
		ck_assert_int_eq(rmq_poll(&it, 1, 0), 1);
		ck_assert(it.revents & RMQ_POLLIN);
		ck_assert(getopt_int(s, RMQ_EVENTS) & RMQ_POLLIN);
		ck_assert_int_eq(rmq_recv(s, b, sizeof(b), RMQ_DONTWAIT),
		                 k == 0 ? 6 : 1);
		ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), k == 0);
	}
	ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), 0);
	ck_assert_int_eq(rmq_send(s, "ok", 2, 0), 2);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* rmq_msg_send and rmq_msg_recv, frame by frame: sizes about every path. */
START_TEST(test_msg_frames)
{
	const char *prov = provs[_i];
	static const size_t sizes[] = {0, 100, 5000, 200000, 3};
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	rmq_msg    *m;
	int         k, n = 5, tmo = 20000;
	pid_t       pid;

	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_echo, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (k = 0; k < n; k++) {
		ck_assert_int_eq(rmq_msg_alloc(s, sizes[k], &m), 0);
		test_fill(rmq_msg_data(m), sizes[k], seed_of(9, k));
		ck_assert_int_eq(rmq_msg_send(s, m, k + 1 < n ? RMQ_SNDMORE : 0),
		                 0);
	}
	for (k = 0; k < n; k++) {
		ck_assert_int_eq(rmq_msg_recv(s, &m, 0), 0);
		ck_assert_uint_eq(rmq_msg_size(m), sizes[k]);
		ck_assert_uint_eq(test_check(rmq_msg_data(m), sizes[k],
		                             seed_of(9, k)),
		                  sizes[k]);
		ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), k + 1 < n);
		rmq_msg_free(m);
	}
	ck_assert_int_eq(rmq_send(s, "END", 3, 0), 3);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/*
 * Every path carries the frame boundary: a message of three frames sent
 * with each path forced in turn (those the provider carries; sizes each
 * path takes), its frames echoed back whole, the path's counters showing
 * it carried them.
 */
START_TEST(test_every_path)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t     b[3][100000], rb[100000];
	size_t      len[3];
	struct rmq_path_stats ps;
	int         path, k, tried = 0, tmo = 20000;
	ssize_t     n;
	pid_t       pid;

	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_echo, NULL, ep, sizeof(ep));
	for (path = 0; path < rmq_path_count(); path++) {
		const char *name = rmq_path_name(path);
		bool        small = strcmp(name, "inject") == 0 ||
		                    strcmp(name, "eager") == 0 ||
		                    strcmp(name, "ring") == 0;

		ck_assert_int_eq(open_socket(RMQ_PAIR, &ctx, &s), 0);
		rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
		/* The local link is a path of its own: forced, the others
		 * keep off it. */
		if (setopt_int(s, RMQ_PATH, path) != 0 ||
		    rmq_connect(s, ep) != 0) {
			close_all(ctx, s);
			continue; /* not on this provider, or not forced */
		}
		len[0] = 1;
		len[1] = 0;
		len[2] = small ? 60 : sizeof(b[2]);
		for (k = 0; k < 3; k++) {
			test_fill(b[k], len[k], seed_of(path, k));
			n = rmq_send(s, b[k], len[k], k < 2 ? RMQ_SNDMORE : 0);
			if (k == 0 && (n == -RMQ_ENOTSUP || n == -RMQ_EMSGSIZE))
				break; /* this peer has no such path */
			ck_assert_msg(n == (ssize_t) len[k], "%s, %s: frame "
			              "%d: %zd", prov, name, k, n);
		}
		if (k == 3) {
			tried++;
			for (k = 0; k < 3; k++) {
				n = rmq_recv(s, rb, sizeof(rb), 0);
				ck_assert_int_eq(n, (ssize_t) len[k]);
				ck_assert_uint_eq(test_check(rb, len[k],
				                             seed_of(path, k)),
				                  len[k]);
				ck_assert_msg(getopt_int(s, RMQ_RCVMORE) == (k < 2),
				              "%s, %s: frame %d's RCVMORE", prov,
				              name, k);
			}
			ck_assert_int_eq(rmq_path_stats(s, path, &ps), 0);
			ck_assert_msg(ps.sent_msgs >= 3, "%s: %s carried %llu",
			              prov, name,
			              (unsigned long long) ps.sent_msgs);
		}
		close_all(ctx, s);
	}
	ck_assert_int_ge(tried, 3);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, "END", 3, 0), 3);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* What rmq_send takes: only its flags. */
START_TEST(test_bad_flags)
{
	rmq_ctx    *ctx;
	rmq_socket *s;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_send(s, "x", 1, 0x40), -RMQ_EINVAL);
	ck_assert_int_eq(getopt_int(s, RMQ_RCVMORE), 0);
	ck_assert_int_eq(setopt_int(s, RMQ_RCVMORE, 1), -RMQ_EINVAL);
	close_all(ctx, s);
}
END_TEST

static Suite *
frames_suite(void)
{
	Suite *su = suite_create("frames");
	TCase *tc = tcase_create("frames");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_pair_frames, 0, NPROVS);
	tcase_add_loop_test(tc, test_pushpull_atomic, 0, NPROVS);
	tcase_add_loop_test(tc, test_reqrep_frames, 0, NPROVS);
	tcase_add_loop_test(tc, test_pubsub_frames, 0, NPROVS);
	tcase_add_loop_test(tc, test_pubsub_behind, 0, NPROVS);
	tcase_add_loop_test(tc, test_maxmsg_total, 0, NPROVS);
	tcase_add_loop_test(tc, test_killed_between_frames, 0, NPROVS);
	tcase_add_loop_test(tc, test_poll_while_frames_remain, 0, NPROVS);
	tcase_add_loop_test(tc, test_msg_frames, 0, NPROVS);
	tcase_add_loop_test(tc, test_every_path, 0, NPROVS);
	tcase_add_test(tc, test_bad_flags);
	suite_add_tcase(su, tc);
	return su;
}

RMQ_CHECK_MAIN(frames_suite)
