/*
 * The local path's large messages (rmq_paths(7), LOCAL): past a quarter of
 * the ring, an RTS goes through the ring and the receiver copies the
 * payload straight out of the sender's memory (process_vm_readv), one
 * copy; where the kernel refuses that, the same RTS's key serves an
 * fi_read over the provider.  Real processes on shm and tcp, public API
 * only: every byte, order, stats, truncation, non-blocking and zero-copy
 * sends, and the fallback under a seccomp filter that makes
 * process_vm_readv fail with EPERM.  A sender that waits in its send
 * writes half of a message of local.split_min or more into the receiver
 * while it reads the other half (split_copies); where its kernel refuses
 * process_vm_writev, the receiver reads it all.  Mid-sized messages
 * (16 KiB up to what the ring takes) that wait in their send go either
 * way (direct_copies), those that do not by the ring.
 *
 * The whole file runs with the local path on and a 256 KiB ring, so the
 * ring carries up to 64 KiB - 16 bytes.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "checkmain.h"
#include "testutil.h"

#define RING      (256u * 1024u)
#define LOCAL_MAX (RING / 4 - 16)
#define BIGGEST   (4u * 1024u * 1024u + 3u)

static const char *const provs[] = {"shm", "tcp"};

/* Past the ring: rendezvous sizes, odd ones included. */
static const size_t sizes[] = {
	LOCAL_MAX + 1, 100000, 1024 * 1024, 17, BIGGEST, 3 * 65536 + 5,
	LOCAL_MAX, 0, 2 * 1024 * 1024,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define ROUNDS 4

/* How a round of echoes runs: the server's kernel refuses it
 * process_vm_readv or process_vm_writev, or nobody splits. */
enum { RUN_PLAIN, RUN_DENY_READ, RUN_DENY_WRITE, RUN_SPLIT_OFF };

/* Large messages both sides copy, half each: round_trips sets
 * local.split_min to 128 KiB (its default is 32 KiB), so that every
 * blocking send of the client (LOCAL_MAX + 1, 17, LOCAL_MAX) stays below
 * it and the server can check that no send which does not wait is ever
 * split; the echoes of 1 MiB and up and 3 * 65536 + 5 split.
 * test_split_default splits at the default. */
#define SPLIT_MIN "131072"
#define NSPLIT 4

/* The system call nr fails with EPERM in this process, every thread. */
static int
deny_cma(long nr)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		         offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	            SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
		return -errno;
	return 0;
}

/* Whether this process may install a seccomp filter: under valgrind it
 * may not (valgrind does not run them), and the two RUN_DENY_* runs say
 * so and skip.  Probed in a child, which the filter would outlive. */
static bool
seccomp_works(void)
{
	pid_t kid = fork();
	int   st;

	if (kid == 0)
		_exit(deny_cma(__NR_process_vm_writev) == 0 ? 0 : 1);
	return kid > 0 && waitpid(kid, &st, 0) == kid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/*
 * The test servers' buffer, with a receive timeout so that a lost client
 * cannot hang them; NULL without memory.
 */
static uint8_t *
serve_buf(rmq_socket *s, size_t size)
{
	uint8_t *b = malloc(size);

	if (b != NULL)
		setopt_int(s, RMQ_RCVTIMEO, 30000);
	return b;
}

/*
 * The test servers' receive: one message into b (cap bytes), which must
 * be want bytes of test_fill(seed).  Returns its length, or says what
 * came instead (as who, item item) and returns -1.
 */
static ssize_t
recv_item(rmq_socket *s, uint8_t *b, size_t cap, size_t want, uint64_t seed,
          const char *who, int item)
{
	ssize_t n = rmq_recv(s, b, cap, 0);

	if (n == (ssize_t) want && test_check(b, want, seed) == want)
		return n;
	fprintf(stderr, "%s: item %d: %zd bytes, wanted %zu (or wrong bytes)\n",
	        who, item, n, want);
	return -1;
}

/* Echo what comes, checked; arg: the RUN_* mode. */
static int
serve_echo(rmq_socket *s, void *arg)
{
	uint8_t         *b    = serve_buf(s, BIGGEST);
	int              mode = *(const int *) arg;
	struct rmq_stats st;
	int              fails = 0, r, i;
	ssize_t          n;

	if (b == NULL)
		return 50;
	if ((mode == RUN_DENY_READ && deny_cma(__NR_process_vm_readv) != 0) ||
	    (mode == RUN_DENY_WRITE && deny_cma(__NR_process_vm_writev) != 0)) {
		fprintf(stderr, "echo: no seccomp filter\n");
		return 51;
	}
	for (r = 0; r < ROUNDS && fails == 0; r++)
		for (i = 0; i < (int) NSIZES && fails == 0; i++) {
			n = recv_item(s, b, BIGGEST, sizes[i],
			              (uint64_t) (r * 100 + i), "echo",
			              r * 100 + i);
			if (n < 0) {
				fails++;
				break;
			}
			if (rmq_send(s, b, (size_t) n, 0) != n)
				fails++;
		}
	rmq_stats(s, &st);
	if (st.recv_msgs[RMQ_PATH_LOCAL] != ROUNDS * NSIZES ||
	    st.proto_errors != 0) {
		fprintf(stderr, "echo: %llu of %zu by the local path, %llu "
		        "protocol errors\n",
		        (unsigned long long) st.recv_msgs[RMQ_PATH_LOCAL],
		        (size_t) (ROUNDS * NSIZES),
		        (unsigned long long) st.proto_errors);
		fails++;
	}
	/* The client sends its large messages without waiting (RMQ_DONTWAIT
	 * or zero-copy: it could not answer a HELP), so none is split. */
	if (st.split_copies != 0) {
		fprintf(stderr, "echo: %llu split copies (mode %d)\n",
		        (unsigned long long) st.split_copies, mode);
		fails++;
	}
	free(b);
	return fails;
}

/* A send that returns at once (RMQ_DONTWAIT, again while there is no
 * room), then b scribbled over and filled again from seed: what went
 * must have been copied first. */
static ssize_t
send_nowait(rmq_socket *s, uint8_t *b, size_t len, uint64_t seed)
{
	ssize_t n;

	do
		n = rmq_send(s, b, len, RMQ_DONTWAIT);
	while (n == -RMQ_EAGAIN);
	memset(b, 0x5a, len);
	test_fill(b, len, seed);
	return n;
}

/* Rounds of every size there and back: blocking, non-blocking and
 * zero-copy sends in turn. */
static void
round_trips(const char *prov, int mode)
{
	char             bep[64], ep[256];
	uint8_t         *b, *c;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	rmq_msg         *m;
	struct rmq_stats st;
	pid_t            srv;
	ssize_t          n;
	int              r, i;

	if ((mode == RUN_DENY_READ || mode == RUN_DENY_WRITE) &&
	    !seccomp_works()) {
		fprintf(stderr, "%s: skipped: this process cannot install a "
		        "seccomp filter (under valgrind?), which the test needs "
		        "to make the kernel refuse process_vm_%s\n", prov,
		        mode == RUN_DENY_READ ? "readv" : "writev");
		return;
	}
	setenv("RMQ_LOCAL_SPLIT_MIN", mode == RUN_SPLIT_OFF ? "0" : SPLIT_MIN,
	       1);
	srv = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_echo, &mode, ep, sizeof(ep));
	b = malloc(BIGGEST); /* after the fork: the server has its own */
	c = malloc(BIGGEST);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(c);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	/* Read by rmq_ctx_new only: not for the tests after this one where
	 * they share a process (CK_FORK=no, as under valgrind). */
	unsetenv("RMQ_LOCAL_SPLIT_MIN");
	setopt_int(s, RMQ_RCVTIMEO, 30000);
	for (r = 0; r < ROUNDS; r++)
		for (i = 0; i < (int) NSIZES; i++) {
			test_fill(b, sizes[i], (uint64_t) (r * 100 + i));
			switch ((r * NSIZES + (size_t) i) % 3) {
			case 0:
				n = rmq_send(s, b, sizes[i], 0);
				break;
			case 1: /* ours to reuse at once: copied first */
				n = send_nowait(s, b, sizes[i],
				                (uint64_t) (r * 100 + i));
				break;
			default: /* the message's own memory is read */
				ck_assert_int_eq(rmq_msg_alloc(s, sizes[i], &m), 0);
				memcpy(rmq_msg_data(m), b, sizes[i]);
				n = rmq_msg_send(s, m, 0) == 0 ? (ssize_t) sizes[i]
				                               : -1;
				break;
			}
			ck_assert_msg(n == (ssize_t) sizes[i],
			              "%s: send %zu: %zd", prov, sizes[i], n);
			n = rmq_recv(s, c, BIGGEST, 0);
			ck_assert_msg(n == (ssize_t) sizes[i],
			              "%s: echo %d/%d: %zd bytes, not %zu", prov, r,
			              i, n, sizes[i]);
			ck_assert_msg(memcmp(b, c, sizes[i]) == 0,
			              "%s: echo of %zu bytes differs", prov,
			              sizes[i]);
		}
	rmq_stats(s, &st);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_LOCAL], ROUNDS * NSIZES);
	ck_assert_uint_eq(st.recv_msgs[RMQ_PATH_LOCAL], ROUNDS * NSIZES);
	ck_assert_uint_eq(st.proto_errors, 0);
	/* The echoes wait in their sends: large ones split -- the first two
	 * always, then as split and whole compare (local_big.c, split_pick) --
	 * unless the server cannot write into us (none, and none asked
	 * after the first refusal) or nobody splits. */
	if (mode == RUN_DENY_WRITE || mode == RUN_SPLIT_OFF)
		ck_assert_uint_eq(st.split_copies, 0);
	else
		ck_assert_msg(st.split_copies >= 2 &&
		                  st.split_copies <= ROUNDS * NSPLIT,
		              "%s: %llu split copies of %d", prov,
		              (unsigned long long) st.split_copies,
		              ROUNDS * NSPLIT);
	close_all(ctx, s);
	ck_assert_int_eq(reap(srv), 0);
	free(b);
	free(c);
}

START_TEST(test_large)
{
	round_trips(provs[_i], RUN_PLAIN);
}
END_TEST

/* The kernel refuses process_vm_readv: fi_read over tcp brings the same
 * bytes. */
START_TEST(test_fallback)
{
	round_trips(provs[_i], RUN_DENY_READ);
}
END_TEST

/* The sender's kernel refuses process_vm_writev: it says so, and the
 * receiver reads the rest itself, then every large message whole. */
START_TEST(test_split_refused)
{
	round_trips(provs[_i], RUN_DENY_WRITE);
}
END_TEST

/* local.split_min 0: the receiver copies every large message whole. */
START_TEST(test_split_off)
{
	round_trips(provs[_i], RUN_SPLIT_OFF);
}
END_TEST

/*
 * local.split_min at its default (32 KiB): messages just past the ring
 * (100,000 B) from a sender that waits are split -- the first two always,
 * then as split and whole compare -- every byte where it belongs.
 */
#define SPLIT_LEN 100000
#define SPLIT_N   8

static int
serve_split_default(rmq_socket *s, void *arg)
{
	uint8_t         *b = serve_buf(s, SPLIT_LEN);
	struct rmq_stats st;
	int              fails = 0, i;

	(void) arg;
	if (b == NULL)
		return 50;
	for (i = 0; i < SPLIT_N && fails == 0; i++) {
		memset(b, 0, SPLIT_LEN);
		fails += recv_item(s, b, SPLIT_LEN, SPLIT_LEN, (uint64_t) i,
		                   "split", i) < 0;
	}
	rmq_stats(s, &st);
	if (st.split_copies < 2 || st.split_copies > SPLIT_N ||
	    st.direct_copies != SPLIT_N || st.proto_errors != 0) {
		fprintf(stderr, "split: %llu split of %llu read from its "
		        "memory, %llu protocol errors\n",
		        (unsigned long long) st.split_copies,
		        (unsigned long long) st.direct_copies,
		        (unsigned long long) st.proto_errors);
		fails++;
	}
	free(b);
	return fails + (rmq_send(s, "k", 1, 0) != 1);
}

START_TEST(test_split_default)
{
	const char *prov = provs[_i];
	char        bep[64], ep[256], k;
	uint8_t    *b;
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       srv;
	int         i;

	unsetenv("RMQ_LOCAL_SPLIT_MIN");
	srv = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_split_default, NULL, ep, sizeof(ep));
	b = malloc(SPLIT_LEN); /* after the fork */
	ck_assert_ptr_nonnull(b);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	setopt_int(s, RMQ_RCVTIMEO, 30000);
	for (i = 0; i < SPLIT_N; i++) {
		test_fill(b, SPLIT_LEN, (uint64_t) i);
		ck_assert_int_eq(rmq_send(s, b, SPLIT_LEN, 0), SPLIT_LEN);
	}
	ck_assert_int_eq(rmq_recv(s, &k, 1, 0), 1);
	close_all(ctx, s);
	ck_assert_int_eq(reap(srv), 0);
	free(b);
}
END_TEST

/* Mid-sized messages (16 KiB to what the ring takes): a send that waits
 * goes by the ring or is read from the sender's memory, whichever cost
 * less so far (local_tx.c, mid_by_cma) -- once the ring has gone round,
 * one copy at least twice, whatever the clock says.  One that does not
 * wait always goes by the ring. */
static const size_t mid_sizes[] = {LOCAL_MAX, 16384, 40000, 100, 65000,
                                   20007, 30000};
#define NMID   (sizeof(mid_sizes) / sizeof(mid_sizes[0]))
#define MID_N  84 /* half waited for, then half RMQ_DONTWAIT */

static int
serve_mid(rmq_socket *s, void *arg)
{
	uint8_t         *b = serve_buf(s, LOCAL_MAX);
	struct rmq_stats st;
	uint64_t         waited = 0;
	int              fails = 0, i;
	ssize_t          n;

	(void) arg;
	if (b == NULL)
		return 50;
	for (i = 0; i < MID_N && fails == 0; i++) {
		n = recv_item(s, b, LOCAL_MAX, mid_sizes[i % NMID],
		              (uint64_t) i, "mid", i);
		if (n < 0) {
			fails++;
			break;
		}
		if (rmq_send(s, b, (size_t) n, 0) != n) /* waits */
			fails++;
		if (i == MID_N / 2 - 1) {
			rmq_stats(s, &st);
			waited = st.direct_copies;
		}
	}
	rmq_stats(s, &st);
	if (waited < 2 || st.direct_copies != waited || st.proto_errors != 0) {
		fprintf(stderr, "mid: %llu read from its memory while it "
		        "waited, %llu after, %llu protocol errors\n",
		        (unsigned long long) waited,
		        (unsigned long long) st.direct_copies,
		        (unsigned long long) st.proto_errors);
		fails++;
	}
	free(b);
	return fails;
}

START_TEST(test_mid)
{
	const char      *prov = provs[_i];
	char             bep[64], ep[256];
	uint8_t         *b, *c;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	pid_t            srv;
	ssize_t          n;
	size_t           len;
	int              i;

	srv = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_mid, NULL, ep, sizeof(ep));
	b = malloc(LOCAL_MAX); /* after the fork */
	c = malloc(LOCAL_MAX);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(c);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	setopt_int(s, RMQ_RCVTIMEO, 30000);
	for (i = 0; i < MID_N; i++) {
		len = mid_sizes[i % NMID];
		test_fill(b, len, (uint64_t) i);
		n = i < MID_N / 2 ? rmq_send(s, b, len, 0)
		                  : send_nowait(s, b, len, (uint64_t) i);
		ck_assert_msg(n == (ssize_t) len, "%s: send %zu: %zd", prov,
		              len, n);
		n = rmq_recv(s, c, LOCAL_MAX, 0);
		ck_assert_msg(n == (ssize_t) len && memcmp(b, c, len) == 0,
		              "%s: echo %d: %zd bytes, not %zu, or not the "
		              "same", prov, i, n, len);
	}
	rmq_stats(s, &st);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_LOCAL], MID_N);
	ck_assert_uint_eq(st.recv_msgs[RMQ_PATH_LOCAL], MID_N);
	ck_assert_uint_eq(st.proto_errors, 0);
	/* Its echoes all waited: some came from its memory, those of
	 * local.split_min (32 KiB) or more perhaps in two halves. */
	ck_assert_msg(st.direct_copies >= 2 &&
	                  st.split_copies <= st.direct_copies,
	              "%s: %llu echoes read from its memory, %llu split", prov,
	              (unsigned long long) st.direct_copies,
	              (unsigned long long) st.split_copies);
	close_all(ctx, s);
	ck_assert_int_eq(reap(srv), 0);
	free(b);
	free(c);
}
END_TEST

/* Pushed faster than read, without waiting: in order, every byte; and a
 * buffer shorter than the message gets its first bytes. */
static int
pusher(void *arg)
{
	const char *ep = arg;
	uint8_t    *b  = malloc(1024 * 1024);
	rmq_ctx    *ctx;
	rmq_socket *s;
	int         i, fails = 0;
	ssize_t     n;

	if (b == NULL || rmq_ctx_new(&ctx, NULL) != 0 ||
	    rmq_socket_open(ctx, RMQ_PUSH, &s) != 0 || rmq_connect(s, ep) != 0)
		return 50;
	setopt_int(s, RMQ_SNDTIMEO, 30000);
	for (i = 0; i < 40 && fails == 0; i++) {
		test_fill(b, 1024 * 1024 - (size_t) i, (uint64_t) i);
		do
			n = rmq_send(s, b, 1024 * 1024 - (size_t) i,
			             RMQ_DONTWAIT);
		while (n == -RMQ_EAGAIN);
		fails += n != (ssize_t) (1024 * 1024 - (size_t) i);
		memset(b, 0xa5, 1024 * 1024); /* it was copied */
	}
	setopt_int(s, RMQ_LINGER, 30000);
	close_all(ctx, s);
	free(b);
	return fails;
}

START_TEST(test_pushpull)
{
	char             bep[64], ep[256];
	size_t           eplen = sizeof(ep);
	uint8_t         *b;
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	pid_t            kid;
	ssize_t          n;
	int              i;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PULL, &s), 0);
	ck_assert_int_eq(rmq_bind(s, bind_addr(provs[_i], bep, sizeof(bep))),
	                 0);
	ck_assert_int_eq(rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &eplen), 0);
	setopt_int(s, RMQ_RCVTIMEO, 30000);
	kid = spawn_child(pusher, ep);
	b   = malloc(1024 * 1024); /* after the fork */
	ck_assert_ptr_nonnull(b);
	for (i = 0; i < 40; i++) {
		/* Every 8th into a 1000-byte buffer: the rest is cut. */
		n = rmq_recv(s, b, i % 8 == 7 ? 1000 : 1024 * 1024, 0);
		ck_assert_int_eq(n, 1024 * 1024 - i);
		ck_assert_uint_eq(test_check(b, i % 8 == 7 ? 1000 : (size_t) n,
		                             (uint64_t) i),
		                  i % 8 == 7 ? 1000 : (size_t) n);
	}
	rmq_stats(s, &st);
	ck_assert_uint_eq(st.recv_msgs[RMQ_PATH_LOCAL], 40);
	/* Closed first: the pusher's close waits for our word that all
	 * arrived, which a socket nobody calls into cannot give. */
	close_all(ctx, s);
	ck_assert_int_eq(reap(kid), 0);
	free(b);
}
END_TEST

static Suite *
large_suite(void)
{
	Suite *su = suite_create("local_large");
	TCase *tc = tcase_create("local");

	/* The whole file: the local path on, a 256 KiB ring. */
	setenv("RMQ_LOCAL", "1", 1);
	setenv("RMQ_LOCAL_RING", "256KiB", 1);

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_large, 0, 2);
	/* tcp only: libfabric's shm moves its own RMA with process_vm_readv
	 * too, so where the kernel refuses it shm's fi_read fails as well
	 * (measured: -EIO), with or without the local path. */
	tcase_add_loop_test(tc, test_fallback, 1, 2);
	tcase_add_loop_test(tc, test_split_refused, 0, 2);
	tcase_add_loop_test(tc, test_split_off, 0, 2);
	tcase_add_loop_test(tc, test_pushpull, 0, 2);
	tcase_add_loop_test(tc, test_mid, 0, 2);
	tcase_add_loop_test(tc, test_split_default, 0, 2);
	suite_add_tcase(su, tc);
	return su;
}

RMQ_CHECK_MAIN(large_suite)
