/*
 * Failure handling with real processes and real sockets: peers killed
 * mid-transfer, garbage and wrong-version handshakes (from a raw TCP
 * client and a fake server), mismatched patterns and providers, oversize
 * messages, bad endpoints, timeouts.  The survivor must get an error, not
 * hang, and keep working.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include "checkmain.h"

#include "testutil.h"

/* ---- peer death ---- */

static int
serve_sleep(rmq_socket *s, void *arg)
{
	char c;

	(void) arg;
	/* Take one message so the connection is up, then stop reading. */
	if (rmq_recv(s, &c, 1, 0) != 1)
		return 1;
	pause();
	return 0;
}

static pid_t
kill_later(pid_t victim, int ms)
{
	pid_t k = fork();

	if (k == 0) {
		usleep((useconds_t) ms * 1000);
		kill(victim, SIGKILL);
		_exit(0);
	}
	return k;
}

/* A 64 MiB rendezvous send whose reader is killed: error, not a hang. */
static void
reader_killed(const char *prov)
{
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	uint8_t    *big = calloc(1, 64 * MiB);
	pid_t       pid, killer;
	ssize_t     n;
	int         tmo = 20000;
	double      t0;

	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_sleep, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_setopt(s, RMQ_SNDTIMEO, &tmo, sizeof(tmo)), 0);
	ck_assert_int_eq(rmq_send(s, "x", 1, 0), 1);
	killer = kill_later(pid, 300);
	t0     = test_now();
	n      = rmq_send(s, big, 64 * MiB, 0);
	/* ECONNRESET from the dead peer, not EAGAIN from the timeout. */
	ck_assert_msg(n == -RMQ_ECONNRESET, "%s: send gave %zd (%s)", prov, n,
	              rmq_strerror((int) n));
	fprintf(stderr, "%s: writer saw the reader die after %.0f ms\n", prov,
	        (test_now() - t0) * 1e3);
	ck_assert_int_eq(reap(killer), 0);
	ck_assert_int_eq(reap(pid), 200 + SIGKILL);
	/* The socket is still usable: it reconnects, and keeps what is
	 * sent meanwhile (a PAIR, up to RMQ_SNDHWM); with reconnection
	 * off it has no peer, so it is not connected. */
	ck_assert_int_eq(rmq_send(s, "y", 1, RMQ_DONTWAIT), 1);
	ck_assert_int_eq(setopt_int(s, RMQ_RECONNECT_IVL, -1), 0);
	ck_assert_int_eq(rmq_disconnect(s, ep), 0);
	ck_assert_int_eq(rmq_send(s, "y", 1, RMQ_DONTWAIT), -RMQ_ENOTCONN);
	tmo = 0;
	ck_assert_int_eq(rmq_setopt(s, RMQ_LINGER, &tmo, sizeof(tmo)), 0);
	close_all(ctx, s);
	free(big);
}

START_TEST(test_reader_killed_shm)
{
	reader_killed("shm");
}
END_TEST

START_TEST(test_reader_killed_tcp)
{
	reader_killed("tcp");
}
END_TEST

/* A receiver waiting for a message whose sender is killed. */
static void
sender_killed(const char *prov)
{
	char        bep[64], ep[256], c;
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid, killer;
	ssize_t     n;
	int         tmo = 20000;

	pid = spawn_server(RMQ_PAIR, bind_addr(prov, bep, sizeof(bep)),
	                   serve_sleep, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo)), 0);
	ck_assert_int_eq(rmq_send(s, "x", 1, 0), 1);
	killer = kill_later(pid, 300);
	n      = rmq_recv(s, &c, 1, 0);
	ck_assert_msg(n == -RMQ_ECONNRESET, "%s: recv gave %zd (%s)", prov, n,
	              rmq_strerror((int) n));
	ck_assert_int_eq(reap(killer), 0);
	reap(pid);
	close_all(ctx, s);
}

START_TEST(test_sender_killed_shm)
{
	sender_killed("shm");
}
END_TEST

START_TEST(test_sender_killed_tcp)
{
	sender_killed("tcp");
}
END_TEST

/* The /dev/shm regions of pid, as libfabric's shm names ours. */
static int
shm_regions_of(pid_t pid)
{
	char   pat[64];
	glob_t g;
	int    n;

	snprintf(pat, sizeof(pat), "/dev/shm/rmq_%d_*", (int) pid);
	if (glob(pat, 0, NULL, &g) != 0)
		return 0;
	n = (int) g.gl_pathc;
	globfree(&g);
	return n;
}

/*
 * A shm process killed with SIGKILL, with no live peer left that had it in
 * its address table (a job killed whole: libfabric's shm removes a dead
 * peer's region itself when a live one lets go of it), leaves its region
 * (16 MiB) in /dev/shm; the next process of ours to make a shm endpoint
 * removes it, and leaves a live process's alone.
 */
START_TEST(test_killed_shm_region_swept)
{
	char        bep[64], ep[256];
	rmq_ctx    *ctx, *ctx2;
	rmq_socket *s, *s2;
	pid_t       pid, later;
	int         st;

	if (readlink("/proc/self/ns/pid", ep, sizeof(ep)) <= 0) {
		fprintf(stderr, "test_killed_shm_region_swept: no "
		                "/proc/self/ns/pid here, so librmq does not "
		                "sweep: skipped\n");
		return;
	}
	/* Ours, alive: a bound shm socket. */
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_bind(s, bind_addr("shm", bep, sizeof(bep))), 0);
	ck_assert_int_gt(shm_regions_of(getpid()), 0);
	/* Its, bound and waiting, then killed. */
	pid = spawn_server(RMQ_PAIR, bind_addr("shm", bep, sizeof(bep)),
	                   serve_sleep, NULL, ep, sizeof(ep));
	ck_assert_int_gt(shm_regions_of(pid), 0);
	kill(pid, SIGKILL);
	/* waitpid, not reap(): reap removes a killed child's leftovers. */
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	if (shm_regions_of(pid) == 0)
		fprintf(stderr, "test_killed_shm_region_swept: libfabric "
		                "removed the killed process's region itself\n");
	/* A later process of ours, on shm: it sweeps as it binds (a
	 * child sweeps anew, whenever its parent last did). */
	later = fork();
	ck_assert_int_ge(later, 0);
	if (later == 0) {
		if (rmq_ctx_new(&ctx2, NULL) != 0 ||
		    rmq_socket_open(ctx2, RMQ_PAIR, &s2) != 0 ||
		    rmq_bind(s2, bind_addr("shm", bep, sizeof(bep))) != 0)
			_exit(1);
		rmq_close(s2);
		rmq_ctx_destroy(ctx2);
		_exit(0);
	}
	ck_assert_int_eq(reap(later), 0);
	ck_assert_msg(shm_regions_of(pid) == 0,
	              "%d region(s) of the killed pid %d left in /dev/shm",
	              shm_regions_of(pid), (int) pid);
	ck_assert_int_eq(shm_regions_of(later), 0); /* closed: removed */
	/* Ours, alive, stay until we close. */
	ck_assert_int_gt(shm_regions_of(getpid()), 0);
	close_all(ctx, s);
	ck_assert_int_eq(shm_regions_of(getpid()), 0);
}
END_TEST

/* REQ waiting for a reply from a REP that dies. */
static int
serve_rep_die(rmq_socket *s, void *arg)
{
	char c;

	(void) arg;
	if (rmq_recv(s, &c, 1, 0) != 1)
		return 1;
	_exit(0); /* no reply, no goodbye: gone */
}

START_TEST(test_req_rep_dies)
{
	char        bep[64], ep[256], c;
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;
	int         tmo = 20000;

	pid = spawn_server(RMQ_REP, bind_addr("tcp", bep, sizeof(bep)),
	                   serve_rep_die, NULL, ep, sizeof(ep));
	open_connected(RMQ_REQ, ep, &ctx, &s);
	ck_assert_int_eq(rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo)), 0);
	ck_assert_int_eq(rmq_send(s, "q", 1, 0), 1);
	ck_assert_int_eq(rmq_recv(s, &c, 1, 0), -RMQ_ECONNRESET);
	ck_assert_int_eq(reap(pid), 0);
	/* The REQ may send again: it waits for the REP to come back. */
	ck_assert_int_eq(rmq_send(s, "q", 1, RMQ_DONTWAIT), -RMQ_EAGAIN);
	ck_assert_int_eq(rmq_disconnect(s, ep), 0);
	ck_assert_int_eq(rmq_send(s, "q", 1, RMQ_DONTWAIT), -RMQ_ENOTCONN);
	close_all(ctx, s);
}
END_TEST

/* ---- handshakes ---- */

static int
serve_after_garbage(rmq_socket *s, void *arg)
{
	struct rmq_stats st;
	char             buf[16];
	ssize_t          n;

	(void) arg;
	int              tmo = 100, i;

	n = rmq_recv(s, buf, sizeof(buf), 0);
	if (n != 2 || rmq_send(s, "ok", 2, 0) != 2)
		return 1;
	/* Keep progressing until the silent client has timed out too. */
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	for (i = 0; i < 150; i++) {
		rmq_stats(s, &st);
		if (st.handshake_errors >= 3)
			return 0; /* garbage, wrong version, silent client */
		(void) rmq_recv(s, buf, sizeof(buf), 0);
	}
	return 2;
}

START_TEST(test_garbage_handshakes_are_rejected)
{
	char        bep[64], ep[256], buf[256];
	uint8_t     v2[24] = {'R', 'M', 'Q', 'C', 2, 1, 0, 0};
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;
	int         g, v, q;
	ssize_t     n;
	struct pollfd pfd;

	pid = spawn_server(RMQ_PAIR, bind_addr("tcp", bep, sizeof(bep)),
	                   serve_after_garbage, NULL, ep, sizeof(ep));
	/* Not our protocol at all. */
	g = tcp_connect_raw(ep);
	ck_assert_int_eq(write(g, "GET / HTTP/1.0\r\n\r\n", 18), 18);
	/* Our magic, a future wire version: told so in a REJECT. */
	v = tcp_connect_raw(ep);
	ck_assert_int_eq(write(v, v2, 8), 8);
	/* A client that connects and says nothing: dropped on timeout. */
	q = tcp_connect_raw(ep);
	/* A real client still gets through. */
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, "hi", 2, 0), 2);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 2);
	pfd = (struct pollfd){.fd = v, .events = POLLIN};
	ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
	n = read(v, buf, sizeof(buf));
	ck_assert_int_ge(n, 12);
	ck_assert_int_eq(memcmp(buf, "RMQC", 4), 0);
	ck_assert_int_eq(buf[5], 2); /* REJECT */
	/* the code, u32 little-endian */
	ck_assert_int_eq((uint8_t) buf[8], RMQ_EVERSION & 0xff);
	ck_assert_int_eq((uint8_t) buf[9], (RMQ_EVERSION >> 8) & 0xff);
	ck_assert_int_eq((uint8_t) buf[10], (RMQ_EVERSION >> 16) & 0xff);
	close(g);
	close(v);
	close_all(ctx, s);
	/* The server counts three bad handshakes once the silent one
	 * times out (handshake_ms, 5 s by default). */
	ck_assert_int_eq(reap(pid), 0);
	close(q);
}
END_TEST

/* A fake server that answers every HELLO with a fixed reply. */
static pid_t
fake_server(const uint8_t *reply, size_t len, char *ep, size_t eplen)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t          sl  = sizeof(sin);
	int                lfd = socket(AF_INET, SOCK_STREAM, 0), fd;
	uint8_t            buf[2048];
	pid_t              pid;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *) &sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(lfd, 4), 0);
	getsockname(lfd, (struct sockaddr *) &sin, &sl);
	snprintf(ep, eplen, "tcp://127.0.0.1:%u", ntohs(sin.sin_port));
	pid = fork();
	if (pid == 0) {
		alarm(30);
		fd = accept(lfd, NULL, NULL);
		if (read(fd, buf, sizeof(buf)) <= 0)
			_exit(1);
		if (write(fd, reply, len) != (ssize_t) len)
			_exit(2);
		(void) read(fd, buf, sizeof(buf)); /* until the client goes */
		_exit(0);
	}
	close(lfd);
	return pid;
}

static void
connect_to_fake(const uint8_t *reply, size_t len, int want)
{
	char        ep[128];
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid = fake_server(reply, len, ep, sizeof(ep));

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_connect(s, ep), want);
	close_all(ctx, s);
	reap(pid);
}

START_TEST(test_connect_to_newer_version)
{
	static const uint8_t v2[] = {'R', 'M', 'Q', 'C', 2, 1, 0, 0};

	connect_to_fake(v2, sizeof(v2), -RMQ_EVERSION);
}
END_TEST

START_TEST(test_connect_to_garbage_server)
{
	static const uint8_t junk[] = "SSH-2.0-OpenSSH_9.2\r\n";

	connect_to_fake(junk, sizeof(junk) - 1, -RMQ_EPROTO);
}
END_TEST

START_TEST(test_connect_to_truncated_hello)
{
	/* A HELLO frame whose body does not hold what it claims. */
	static const uint8_t bad[] = {'R', 'M', 'Q', 'C', 1, 1, 5, 0,
	                              0x10, 0, 9, 's', 'h'};

	connect_to_fake(bad, sizeof(bad), -RMQ_EPROTO);
}
END_TEST

/* A HELLO for a PAIR on tcp whose eager limit (16 bytes) is below what
 * any librmq peer has: refused before its fabric address is used. */
START_TEST(test_connect_to_tiny_eager_limit)
{
	char              prov[32];
	uint8_t           m[128] = {'R', 'M', 'Q', 'C', 1, 1}, *p = m + 8;
	uint8_t           sa[16] = {2, 0, 0, 9, 127, 0, 0, 1}; /* AF_INET */

	fabric_prov_name("tcp", prov, sizeof(prov));

	p[0] = 0x10; /* PAIR */
	p[1] = 0;
	p[2] = (uint8_t) strlen(prov);
	memcpy(p + 3, prov, strlen(prov));
	p += 3 + strlen(prov);
	memset(p, 0, 26);
	p[0]  = 1;   /* conn */
	p[4]  = 16;  /* rcvhwm */
	p[8]  = 0xff;/* maxmsg */
	p[20] = 16;  /* eager_max */
	p[24] = sizeof(sa);
	memcpy(p + 26, sa, sizeof(sa));
	p += 26 + sizeof(sa);
	m[6] = (uint8_t) (p - m - 8);
	connect_to_fake(m, (size_t) (p - m), -RMQ_EPROTO);
}
END_TEST

static int
serve_nothing(rmq_socket *s, void *arg)
{
	char c;
	int  tmo = 3000;

	(void) arg;
	rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo));
	/* Progress (accept and refuse) until the client is done. */
	return rmq_recv(s, &c, 1, 0) == 1 ? 0 : 0;
}

START_TEST(test_pattern_mismatch)
{
	char        bep[64], ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	/* REP to REP: both wait for the other to ask. */
	pid = spawn_server(RMQ_REP, bind_addr("tcp", bep, sizeof(bep)),
	                   serve_nothing, NULL, ep, sizeof(ep));
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_REP, &s), 0);
	ck_assert_int_eq(rmq_connect(s, ep), -RMQ_EPATTERN);
	close_all(ctx, s);
	reap(pid);
}
END_TEST

START_TEST(test_provider_mismatch)
{
	char        bep[64], ep[256], tcp_ep[256];
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	/* shm data, TCP control channel; the client speaks tcp. */
	pid = spawn_server(RMQ_PAIR, bind_addr("shm", bep, sizeof(bep)),
	                   serve_nothing, NULL, ep, sizeof(ep));
	snprintf(tcp_ep, sizeof(tcp_ep), "tcp://%s", ep + strlen("shm://"));
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_connect(s, tcp_ep), -RMQ_EPROVIDER);
	close_all(ctx, s);
	reap(pid);
}
END_TEST

static int
serve_pair_once(rmq_socket *s, void *arg)
{
	char c;

	(void) arg;
	return rmq_recv(s, &c, 1, 0) == 1 ? 0 : 1;
}

START_TEST(test_pair_second_peer_refused)
{
	char        bep[64], ep[256];
	rmq_ctx    *ctx, *ctx2;
	rmq_socket *s, *s2;
	pid_t       pid;

	pid = spawn_server(RMQ_PAIR, bind_addr("tcp", bep, sizeof(bep)),
	                   serve_pair_once, NULL, ep, sizeof(ep));
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_ctx_new(&ctx2, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx2, RMQ_PAIR, &s2), 0);
	ck_assert_int_eq(rmq_connect(s2, ep), -RMQ_EPEERFULL);
	close_all(ctx2, s2);
	ck_assert_int_eq(rmq_send(s, "x", 1, 0), 1);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

/* ---- limits and local errors ---- */

static int
serve_small_limit(rmq_socket *s, void *arg)
{
	char    buf[2048];
	ssize_t n = rmq_recv(s, buf, sizeof(buf), 0);

	(void) arg;
	return n == 1000 ? 0 : 1;
}

START_TEST(test_maxmsgsize_from_peer)
{
	char        bep[64], ep[256];
	uint8_t     buf[2000] = {0};
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	pid = spawn_server_opts(RMQ_PAIR, bind_addr("tcp", bep, sizeof(bep)),
	                        serve_small_limit, NULL, ep, sizeof(ep), 0,
	                        1000);
	open_connected(RMQ_PAIR, ep, &ctx, &s);
	ck_assert_int_eq(rmq_send(s, buf, 1001, 0), -RMQ_EMSGSIZE);
	ck_assert_int_eq(rmq_send(s, buf, 1000, 0), 1000);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

START_TEST(test_bad_endpoints)
{
	rmq_ctx    *ctx;
	rmq_socket *s;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_bind(s, "nonsense"), -RMQ_EADDR);
	ck_assert_int_eq(rmq_bind(s, "udp://1.2.3.4:5"), -EPROTONOSUPPORT);
	ck_assert_int_eq(rmq_connect(s, "udp://1.2.3.4:5"), -EPROTONOSUPPORT);
	ck_assert_int_eq(rmq_bind(s, "tcp://no-such-host.invalid:5"),
	                 -RMQ_ERESOLVE);
	ck_assert_int_eq(rmq_connect(s, "tcp://no-such-host.invalid:5"),
	                 -RMQ_ERESOLVE);
	ck_assert_str_eq(rmq_strerror(-RMQ_ERESOLVE),
	                 "cannot resolve the endpoint's host name");
	ck_assert_str_eq(rmq_strerror(-RMQ_EADDR), "malformed endpoint");
	ck_assert_int_eq(rmq_bind(s, "tcp://127.0.0.1"), -RMQ_EADDR);
	ck_assert_int_eq(rmq_bind(s, "tcp://127.0.0.1:99999"), -RMQ_EADDR);
	ck_assert_int_eq(rmq_bind(s, "tcp://:5"), -RMQ_EADDR);
	ck_assert_int_eq(rmq_connect(s, NULL), -RMQ_EINVAL);
	close_all(ctx, s);
}
END_TEST

START_TEST(test_connect_refused_times_out)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	int         tmo = 300;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_CONNECT_TIMEOUT, &tmo, sizeof(tmo)),
	                 0);
	/* Port 1 on loopback: nobody listens. */
	ck_assert_int_eq(rmq_connect(s, "tcp://127.0.0.1:1"), -RMQ_ETIMEDOUT);
	close_all(ctx, s);
}
END_TEST

START_TEST(test_recv_timeouts)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	char        c, ep[256];
	size_t      len = sizeof(ep);
	int         tmo = 50;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_bind(s, "tcp://127.0.0.1:0"), 0);
	ck_assert_int_eq(rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len), 0);
	ck_assert_int_eq(strncmp(ep, "tcp://127.0.0.1:", 16), 0);
	ck_assert_int_eq(rmq_recv(s, &c, 1, RMQ_DONTWAIT), -RMQ_EAGAIN);
	ck_assert_int_eq(rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo)), 0);
	ck_assert_int_eq(rmq_recv(s, &c, 1, 0), -RMQ_EAGAIN);
	ck_assert_int_eq(rmq_setopt(s, RMQ_RCVTIMEO, &tmo, 1), -RMQ_EINVAL);
	close_all(ctx, s);
}
END_TEST

START_TEST(test_bind_in_use)
{
	rmq_ctx    *ctx;
	rmq_socket *a, *b;
	char        ep[256];
	size_t      len = sizeof(ep);

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &a), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &b), 0);
	ck_assert_int_eq(rmq_bind(a, "tcp://127.0.0.1:0"), 0);
	rmq_getopt(a, RMQ_LAST_ENDPOINT, ep, &len);
	ck_assert_int_eq(rmq_bind(b, ep), -RMQ_EADDRINUSE);
	/* a context with open sockets refuses to go */
	ck_assert_int_eq(rmq_ctx_destroy(ctx), -EBUSY);
	ck_assert_int_eq(rmq_close(a), 0);
	ck_assert_int_eq(rmq_close(b), 0);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
}
END_TEST

static int
serve_one_echo(rmq_socket *s, void *arg)
{
	char             buf[16];
	ssize_t          n;
	struct rmq_stats st;
	int              want = *(int *) arg;

	n = rmq_recv(s, buf, sizeof(buf), 0);
	if (n <= 0 || rmq_send(s, buf, (size_t) n, 0) != n)
		return 1;
	rmq_stats(s, &st);
	/* The flood pushed out at least this many handshakes. */
	return st.handshake_errors >= (uint64_t) want ? 0 : 2;
}

/* A flood of silent connections (limits.handshakes 50 at the REP, 300
 * connections that never say HELLO): the oldest are dropped, a real
 * client is still served. */
START_TEST(test_handshake_flood)
{
	char               bep[64], ep[256], buf[8];
	rmq_ctx           *ctx;
	rmq_socket        *s;
	pid_t              pid;
	int                fds[300], i, want = 200, tmo = 10000;
	unsigned           port;
	struct sockaddr_in sin = {.sin_family = AF_INET};

	setenv("RMQ_LIMITS_HANDSHAKES", "50", 1);
	pid = spawn_server(RMQ_REP, bind_addr("tcp", bep, sizeof(bep)),
	                   serve_one_echo, &want, ep, sizeof(ep));
	unsetenv("RMQ_LIMITS_HANDSHAKES");
	ck_assert_int_eq(sscanf(ep, "tcp://127.0.0.1:%u", &port), 1);
	sin.sin_port        = htons((uint16_t) port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < 300; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		ck_assert_int_ge(fds[i], 0);
		(void) connect(fds[i], (struct sockaddr *) &sin, sizeof(sin));
		if (i % 50 == 49)
			usleep(20000); /* let the REP take them in */
	}
	usleep(200000);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_REQ, &s), 0);
	ck_assert_int_eq(rmq_setopt(s, RMQ_RCVTIMEO, &tmo, sizeof(tmo)), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	ck_assert_int_eq(rmq_send(s, "hi", 2, 0), 2);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 2);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);
	for (i = 0; i < 300; i++)
		close(fds[i]);
}
END_TEST

/* A failed bind or connect leaves the socket as it was: not tied to the
 * provider it tried, so a bind with another one works. */
START_TEST(test_failed_call_leaves_socket)
{
	rmq_ctx    *ctx;
	rmq_socket *a, *b, *c;
	char        ep[256], shm[64];
	size_t      len = sizeof(ep);
	double      t0;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &a), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &b), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &c), 0);
	ck_assert_int_eq(rmq_bind(a, "tcp://127.0.0.1:0"), 0);
	rmq_getopt(a, RMQ_LAST_ENDPOINT, ep, &len);
	ck_assert_int_eq(rmq_bind(b, ep), -RMQ_EADDRINUSE);
	snprintf(shm, sizeof(shm), "shm://left_%d", (int) getpid());
	ck_assert_int_eq(rmq_bind(b, shm), 0);
	ck_assert_int_eq(rmq_close(a), 0); /* nobody at ep now */
	ck_assert_int_eq(setopt_int(c, RMQ_CONNECT_TIMEOUT, 200), 0);
	ck_assert_int_eq(rmq_connect(c, ep), -RMQ_ETIMEDOUT);
	/* a provider this machine lacks fails at once, bind and connect */
	t0 = test_now();
	ck_assert_int_eq(rmq_connect(c, "verbs://127.0.0.1:5"), -RMQ_ENODEV);
	ck_assert_int_eq(rmq_bind(c, "verbs://127.0.0.1:5"), -RMQ_ENODEV);
	ck_assert_double_lt(test_now() - t0, 1.0);
	snprintf(shm, sizeof(shm), "shm://left2_%d", (int) getpid());
	ck_assert_int_eq(rmq_bind(c, shm), 0);
	ck_assert_int_eq(rmq_close(b), 0);
	ck_assert_int_eq(rmq_close(c), 0);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
}
END_TEST

START_TEST(test_strerror)
{
	ck_assert_str_eq(rmq_strerror(-RMQ_EVERSION),
	                 "peer speaks another librmq wire version");
	ck_assert_str_eq(rmq_strerror(RMQ_EFSM),
	                 "operation not valid in the socket's current state");
	ck_assert_str_eq(rmq_strerror(-ECONNRESET), strerror(ECONNRESET));
	ck_assert_str_eq(rmq_strerror(0), "success");
}
END_TEST

static Suite *
failure_suite(void)
{
	Suite *s  = suite_create("failure");
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_reader_killed_shm);
	tcase_add_test(tc, test_reader_killed_tcp);
	tcase_add_test(tc, test_sender_killed_shm);
	tcase_add_test(tc, test_sender_killed_tcp);
	tcase_add_test(tc, test_killed_shm_region_swept);
	tcase_add_test(tc, test_req_rep_dies);
	tcase_add_test(tc, test_garbage_handshakes_are_rejected);
	tcase_add_test(tc, test_connect_to_newer_version);
	tcase_add_test(tc, test_connect_to_garbage_server);
	tcase_add_test(tc, test_connect_to_truncated_hello);
	tcase_add_test(tc, test_connect_to_tiny_eager_limit);
	tcase_add_test(tc, test_pattern_mismatch);
	tcase_add_test(tc, test_provider_mismatch);
	tcase_add_test(tc, test_pair_second_peer_refused);
	tcase_add_test(tc, test_maxmsgsize_from_peer);
	tcase_add_test(tc, test_bad_endpoints);
	tcase_add_test(tc, test_connect_refused_times_out);
	tcase_add_test(tc, test_recv_timeouts);
	tcase_add_test(tc, test_bind_in_use);
	tcase_add_test(tc, test_failed_call_leaves_socket);
	tcase_add_test(tc, test_handshake_flood);
	tcase_add_test(tc, test_strerror);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(failure_suite)
