/*
 * Contexts and their configuration, end to end: a YAML file's thresholds
 * move messages to other paths, its provider serves fabric:// endpoints,
 * and a bad file makes rmq_ctx_new fail cleanly.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include "testutil.h"
#include "checkmain.h"

static char cfg_path[64];

static void
write_cfg(const char *text)
{
	FILE *f;

	snprintf(cfg_path, sizeof(cfg_path), "/tmp/check_ctx_%d.yaml",
	         (int) getpid());
	f = fopen(cfg_path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static int
serve_two(rmq_socket *s, void *arg)
{
	uint8_t buf[4096];
	int     i, fails = 0;

	(void) arg;
	for (i = 0; i < 2; i++) {
		ssize_t n = rmq_recv(s, buf, sizeof(buf), 0);

		if (n <= 0 || test_check(buf, (size_t) n, (uint64_t) n) !=
		                  (size_t) n)
			fails++;
	}
	return fails + (rmq_send(s, "k", 1, 0) != 1);
}

/* thresholds.eager_max: 1KiB sends a 2000-byte message by rendezvous. */
START_TEST(test_yaml_thresholds_choose_paths)
{
	char             bep[64], ep[256], c;
	uint8_t          buf[2000];
	rmq_ctx         *ctx;
	rmq_socket      *s;
	struct rmq_stats st;
	size_t           inj, eag;
	int              rndv;
	pid_t            pid;

	pid = spawn_server(RMQ_PAIR, bind_addr("tcp", bep, sizeof(bep)),
	                   serve_two, NULL, ep, sizeof(ep));
	/* The provider's table: a same-host peer would take the local
	 * path whatever it says. */
	write_cfg("# test\nthresholds:\n  eager_max: 1KiB\n  inject_max: 16\n"
	          "  ring_max: 1KiB\nlocal:\n  enabled: false\n");
	ck_assert_int_eq(rmq_ctx_new(&ctx, cfg_path), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	socket_paths(s, &inj, &eag, &rndv);
	ck_assert_uint_eq(inj, 16);
	ck_assert_uint_eq(eag, 1024);
	test_fill(buf, 1000, 1000);
	ck_assert_int_eq(rmq_send(s, buf, 1000, 0), 1000);
	test_fill(buf, 2000, 2000);
	ck_assert_int_eq(rmq_send(s, buf, 2000, 0), 2000);
	ck_assert_int_eq(rmq_recv(s, &c, 1, 0), 1);
	ck_assert_int_eq(rmq_stats(s, &st), 0);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_EAGER], 1);
	ck_assert_uint_eq(st.sent_msgs[rndv], 1);
	close_all(ctx, s);
	unlink(cfg_path);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

static int
serve_fabric(rmq_socket *s, void *arg)
{
	char    buf[16];
	ssize_t n = rmq_recv(s, buf, sizeof(buf), 0);

	(void) arg;
	return n == 3 && rmq_send(s, buf, 3, 0) == 3 ? 0 : 1;
}

/* provider: tcp in YAML, fabric:// endpoints on both sides. */
START_TEST(test_yaml_provider_for_fabric_endpoints)
{
	char        ep[256], fab[272], buf[16], prov[32];
	size_t      len = sizeof(prov);
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	write_cfg("provider: tcp\n");
	setenv("RMQ_CONFIG", cfg_path, 1);
	/* The server child reads $RMQ_CONFIG too (rmq_ctx_new(NULL)). */
	pid = spawn_server(RMQ_PAIR, "fabric://127.0.0.1:0", serve_fabric,
	                   NULL, ep, sizeof(ep));
	ck_assert_int_eq(strncmp(ep, "tcp://", 6), 0);
	snprintf(fab, sizeof(fab), "fabric://%s", ep + 6);
	open_connected(RMQ_PAIR, fab, &ctx, &s);
	ck_assert_int_eq(rmq_getopt(s, RMQ_PROVIDER_NAME, prov, &len), 0);
	/* libfabric's name for it: tcp;ofi_rxm on 1.17, tcp on 2.x. */
	ck_assert(strcmp(prov, "tcp;ofi_rxm") == 0 || strcmp(prov, "tcp") == 0);
	ck_assert_int_eq(rmq_send(s, "abc", 3, 0), 3);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 3);
	close_all(ctx, s);
	unsetenv("RMQ_CONFIG");
	unlink(cfg_path);
	ck_assert_int_eq(reap(pid), 0);
}
END_TEST

START_TEST(test_bad_yaml_fails_cleanly)
{
	rmq_ctx *ctx = (rmq_ctx *) 0x1;

	write_cfg("thresholds:\n  eager_max: lots\n");
	ck_assert_int_eq(rmq_ctx_new(&ctx, cfg_path), -RMQ_ECONFIG);
	ck_assert_ptr_null(ctx);
	write_cfg("providr: shm\n");
	ck_assert_int_eq(rmq_ctx_new(&ctx, cfg_path), -RMQ_ECONFIG);
	unlink(cfg_path);
	ck_assert_int_eq(rmq_ctx_new(&ctx, "/nonexistent/rmq.yaml"), -ENOENT);
	setenv("RMQ_EAGER_MAX", "x", 1);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), -RMQ_ECONFIG);
	unsetenv("RMQ_EAGER_MAX");
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
}
END_TEST

/* A provider this machine lacks: a clear error at bind, not a crash. */
START_TEST(test_missing_provider)
{
	rmq_ctx    *ctx;
	rmq_socket *s;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_bind(s, "verbs://127.0.0.1:0"), -RMQ_ENODEV);
	ck_assert_int_eq(rmq_bind(s, "efa://127.0.0.1:0"), -RMQ_ENODEV);
	/* and the socket still works on a provider that is here */
	ck_assert_int_eq(rmq_bind(s, "tcp://127.0.0.1:0"), 0);
	close_all(ctx, s);
}
END_TEST

/* stderr of f(arg), into buf (librmq logs its errors there). */
static void
capture_stderr(int (*f)(void *), void *arg, int *rc, char *buf, size_t len)
{
	char  path[64];
	FILE *in;
	int   fd, saved;
	size_t n;

	snprintf(path, sizeof(path), "/tmp/check_ctx_err_%d", (int) getpid());
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	*rc = f(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	in = fopen(path, "r");
	ck_assert_ptr_nonnull(in);
	n = fread(buf, 1, len - 1, in);
	buf[n] = '\0';
	fclose(in);
	unlink(path);
}

static int
ctx_from_file(void *arg)
{
	rmq_ctx *ctx = NULL;
	int      rc  = rmq_ctx_new(&ctx, (const char *) arg);

	if (ctx != NULL)
		rmq_ctx_destroy(ctx);
	return rc;
}

/*
 * rmq_ctx_new on a file holding yaml fails with -RMQ_ECONFIG, and its
 * message holds the file's name followed by tail; msg gets the message.
 */
static void
ctx_file_fails(const char *yaml, const char *tail, char *msg, size_t len)
{
	char want[512];
	int  rc;

	write_cfg(yaml);
	capture_stderr(ctx_from_file, cfg_path, &rc, msg, len);
	ck_assert_int_eq(rc, -RMQ_ECONFIG);
	snprintf(want, sizeof(want), "%s%s", cfg_path, tail);
	ck_assert_msg(strstr(msg, want) != NULL, "want: %s\ngot: %s", want,
	              msg);
}

/* A provider named in the file or the environment that this machine
 * lacks fails the context, saying where and what there is. */
START_TEST(test_unavailable_provider_in_config)
{
	char msg[1024];
	int  rc;

	ctx_file_fails("log: warn\nprovider: verbs\n",
	               ":2:11: provider: 'verbs' is not available on this "
	               "machine (available here: ",
	               msg, sizeof(msg));
	ck_assert_ptr_nonnull(strstr(msg, "shm"));
	ck_assert_ptr_nonnull(strstr(msg, "tcp"));
	setenv("RMQ_PROVIDER", "efa", 1);
	capture_stderr(ctx_from_file, NULL, &rc, msg, sizeof(msg));
	unsetenv("RMQ_PROVIDER");
	ck_assert_int_eq(rc, -RMQ_ECONFIG);
	ck_assert_msg(strstr(msg, "RMQ_PROVIDER: 'efa' is not available on "
	                          "this machine (available here: ") != NULL,
	              "got: %s", msg);
	/* one that is here is fine */
	write_cfg("provider: shm\n");
	ck_assert_int_eq(ctx_from_file(cfg_path), 0);
	unlink(cfg_path);
}
END_TEST

/*
 * A thresholds section is named by its pattern: the config takes any
 * name, rmq_ctx_new refuses one no pattern reads, from the file or the
 * environment, and says which there are.
 */
START_TEST(test_pattern_sections)
{
	char msg[1024];
	int  rc;

	ctx_file_fails("log: warn\nthresholds:\n  piar:\n    path: seg\n",
	               ":4:11: thresholds.piar: no pattern reads a section "
	               "'piar' (the patterns' sections: pair, reqrep, pubsub, pipeline, rpc)",
	               msg, sizeof(msg));
	setenv("RMQ_THRESHOLDS_FANIN_EAGER_MAX", "4K", 1);
	capture_stderr(ctx_from_file, NULL, &rc, msg, sizeof(msg));
	unsetenv("RMQ_THRESHOLDS_FANIN_EAGER_MAX");
	ck_assert_int_eq(rc, -RMQ_ECONFIG);
	ck_assert_msg(strstr(msg, "RMQ_THRESHOLDS_FANIN_EAGER_MAX: no pattern "
	                          "reads a section 'fanin'") != NULL,
	              "got: %s", msg);
	/* the patterns' own sections, from the file and the environment */
	write_cfg("thresholds:\n  reqrep:\n    path: seg\n"
	          "  pair:\n    eager_max: 2KiB\n");
	setenv("RMQ_THRESHOLDS_PAIR_RNDV", "rndv_send", 1);
	rc = ctx_from_file(cfg_path);
	unsetenv("RMQ_THRESHOLDS_PAIR_RNDV");
	ck_assert_int_eq(rc, 0);
	unlink(cfg_path);
}
END_TEST

/* ---- provider_order, provider knobs, socket names (issue 4) ---- */

/* provider_order: auto takes the first listed provider this machine has,
 * for fabric:// on both sides; none of them here fails the bind. */
START_TEST(test_provider_order)
{
	char        ep[256], fab[272], buf[16], prov[32];
	size_t      len = sizeof(prov);
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	setenv("RMQ_PROVIDER_ORDER", "efa, verbs, sockets, tcp", 1);
	pid = spawn_server(RMQ_PAIR, "fabric://127.0.0.1:0", serve_fabric,
	                   NULL, ep, sizeof(ep));
	ck_assert_msg(strncmp(ep, "sockets://", 10) == 0, "bound %s", ep);
	snprintf(fab, sizeof(fab), "fabric://%s", ep + 10);
	open_connected(RMQ_PAIR, fab, &ctx, &s);
	ck_assert_int_eq(rmq_getopt(s, RMQ_PROVIDER_NAME, prov, &len), 0);
	ck_assert_str_eq(prov, "sockets");
	ck_assert_int_eq(rmq_send(s, "abc", 3, 0), 3);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 3);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);

	setenv("RMQ_PROVIDER_ORDER", "efa,verbs", 1);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_bind(s, "fabric://127.0.0.1:0"), -RMQ_ENODEV);
	close_all(ctx, s);
	/* a bad list is a config error, named */
	setenv("RMQ_PROVIDER_ORDER", "tcp,tcp", 1);
	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), -RMQ_ECONFIG);
	unsetenv("RMQ_PROVIDER_ORDER");
}
END_TEST

static int
serve_domain(rmq_socket *s, void *arg)
{
	char    buf[16], dom[64];
	size_t  len = sizeof(dom);
	ssize_t n   = rmq_recv(s, buf, sizeof(buf), 0);

	if (rmq_getopt(s, RMQ_DOMAIN_NAME, dom, &len) != 0 ||
	    strcmp(dom, (const char *) arg) != 0)
		return 1;
	return n == 3 && rmq_send(s, buf, 3, 0) == 3 ? 0 : 1;
}

/* An IPv4 address of this machine that is not loopback, or 0. */
static int
other_ipv4(char *buf, size_t len)
{
	struct ifaddrs *ifa, *i;
	int             found = 0;

	if (getifaddrs(&ifa) != 0)
		return 0;
	for (i = ifa; i != NULL && !found; i = i->ifa_next)
		if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
		    strcmp(i->ifa_name, "lo") != 0)
			found = inet_ntop(AF_INET,
			                  &((struct sockaddr_in *) i->ifa_addr)
			                       ->sin_addr,
			                  buf, (socklen_t) len) != NULL;
	freeifaddrs(ifa);
	return found;
}

/* tcp.interface / sockets.interface: the fabric domain is that
 * interface's, on both sides, a bind to * included; a bind to another
 * interface's address, or an interface the machine lacks, is an error. */
static void
interface_knob(const char *prov)
{
	char        text[128], bep[128], ep[256], buf[16], dom[64], other[64];
	size_t      len = sizeof(dom);
	rmq_ctx    *ctx;
	rmq_socket *s;
	pid_t       pid;

	snprintf(text, sizeof(text), "%s:\n  interface: lo\n", prov);
	write_cfg(text);
	/* libfabric's own FI_TCP_IFACE=lo (the test environment) would
	 * leave tcp nothing else to choose from: without it, fi_info lists
	 * every interface, lo not first where there is another. */
	unsetenv("FI_TCP_IFACE");
	setenv("RMQ_CONFIG", cfg_path, 1);
	snprintf(bep, sizeof(bep), "%s://*:0", prov);
	pid = spawn_server(RMQ_PAIR, bep, serve_domain, "lo", ep, sizeof(ep));
	/* The bound endpoint says *: connect to the loopback address. */
	snprintf(bep, sizeof(bep), "%s://127.0.0.1:%s", prov,
	         strrchr(ep, ':') + 1);
	open_connected(RMQ_PAIR, bep, &ctx, &s);
	ck_assert_int_eq(rmq_getopt(s, RMQ_DOMAIN_NAME, dom, &len), 0);
	ck_assert_str_eq(dom, "lo");
	ck_assert_int_eq(rmq_send(s, "abc", 3, 0), 3);
	ck_assert_int_eq(rmq_recv(s, buf, sizeof(buf), 0), 3);
	close_all(ctx, s);
	ck_assert_int_eq(reap(pid), 0);

	if (other_ipv4(other, sizeof(other))) {
		ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
		ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
		snprintf(bep, sizeof(bep), "%s://%s:0", prov, other);
		ck_assert_int_eq(rmq_bind(s, bep), -RMQ_EADDR);
		close_all(ctx, s);
	} else {
		fprintf(stderr, "check_ctx: no non-loopback IPv4 address: "
		                "bind-elsewhere case not run\n");
	}
	unsetenv("RMQ_CONFIG");
	unlink(cfg_path);
}

START_TEST(test_interface_knob_tcp)
{
	interface_knob("tcp");
}
END_TEST

START_TEST(test_interface_knob_sockets)
{
	interface_knob("sockets");
}
END_TEST

START_TEST(test_interface_missing)
{
	char msg[1024];

	ctx_file_fails("tcp:\n  interface: nosuch9\n",
	               ":2:14: tcp.interface: 'nosuch9' is not a network "
	               "interface on this machine (interfaces here: lo",
	               msg, sizeof(msg));
	ctx_file_fails("numa:\n  policy: cpuset\n",
	               ":2:11: numa.policy: policy cpuset needs numa.cpuset",
	               msg, sizeof(msg));
	unlink(cfg_path);
}
END_TEST

#define BIG_MSG 200000

static int
serve_named(rmq_socket *s, void *arg)
{
	uint8_t *buf = malloc(BIG_MSG);
	int      i, fails = 0;
	ssize_t  n;

	(void) arg;
	/* per client: one small and one large message, then a reply */
	for (i = 0; buf != NULL && i < 3; i++) {
		n = rmq_recv(s, buf, BIG_MSG, 0);
		if (n != 64 || test_check(buf, 64, 64) != 64)
			fails++;
		n = rmq_recv(s, buf, BIG_MSG, 0);
		if (n != BIG_MSG ||
		    test_check(buf, BIG_MSG, BIG_MSG) != BIG_MSG)
			fails++;
		fails += rmq_send(s, "k", 1, 0) != 1;
	}
	free(buf);
	return buf == NULL ? 1 : fails;
}

/* One client: a socket named name (or none) sends 64 B and BIG_MSG;
 * st gets its stats. */
static void
named_client(const char *ep, const char *name, struct rmq_stats *st)
{
	static uint8_t big[BIG_MSG];
	uint8_t        small[64];
	rmq_ctx       *ctx;
	rmq_socket    *s;
	char           c, got[64];
	size_t         len = sizeof(got);

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	if (name != NULL) {
		ck_assert_int_eq(rmq_setopt(s, RMQ_NAME, name, strlen(name)), 0);
		ck_assert_int_eq(rmq_getopt(s, RMQ_NAME, got, &len), 0);
		ck_assert_str_eq(got, name);
	}
	ck_assert_int_eq(rmq_connect(s, ep), 0);
	test_fill(small, 64, 64);
	test_fill(big, BIG_MSG, BIG_MSG);
	ck_assert_int_eq(rmq_send(s, small, 64, 0), 64);
	ck_assert_int_eq(rmq_send(s, big, BIG_MSG, 0), BIG_MSG);
	ck_assert_int_eq(rmq_recv(s, &c, 1, 0), 1);
	ck_assert_int_eq(rmq_stats(s, st), 0);
	close_all(ctx, s);
}

/* thresholds.sockets: a socket's name picks its section; an exact name
 * wins over a pattern; an unnamed socket keeps the pattern's table. */
START_TEST(test_named_thresholds)
{
	char             bep[64], ep[256];
	struct rmq_stats st;
	pid_t            pid;

	write_cfg("thresholds:\n"
	          "  sockets:\n"
	          "    \"bulk*\":\n"
	          "      path: seg\n"
	          "    bulk1:\n"
	          "      rndv: rndv_write\n"
	          "      inject_max: 0\n"
	          "      eager_max: 100\n"
	          "    ctl:\n"
	          "      path: eager\n"
	          "local:\n" /* the tables, not the same-host ring */
	          "  enabled: false\n");
	setenv("RMQ_CONFIG", cfg_path, 1);
	pid = spawn_server(RMQ_PAIR, bind_addr("tcp", bep, sizeof(bep)),
	                   serve_named, NULL, ep, sizeof(ep));
	/* exact name: its own section (rndv_write above 100 B eager) */
	named_client(ep, "bulk1", &st);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_RNDV_WRITE], 1);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_SEG], 0);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_INJECT] +
	                      st.sent_msgs[RMQ_PATH_EAGER],
	                  1);
	/* a pattern: every message segmented */
	named_client(ep, "bulk22", &st);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_SEG], 2);
	/* no name: the defaults (no seg, no rndv_write) */
	named_client(ep, NULL, &st);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_SEG], 0);
	ck_assert_uint_eq(st.sent_msgs[RMQ_PATH_RNDV_WRITE], 0);
	ck_assert_int_eq(reap(pid), 0);
	unsetenv("RMQ_CONFIG");
	unlink(cfg_path);
}
END_TEST

START_TEST(test_name_option)
{
	char        long_name[80], got[80], bep[64];
	size_t      len = sizeof(got);
	rmq_ctx    *ctx;
	rmq_socket *s;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_getopt(s, RMQ_NAME, got, &len), 0);
	ck_assert_str_eq(got, "");
	ck_assert_int_eq(rmq_setopt(s, RMQ_NAME, "a.b", 3), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_NAME, "", 0), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_NAME, "x*", 2), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_NAME, NULL, 3), -RMQ_EINVAL);
	memset(long_name, 'a', 64);
	ck_assert_int_eq(rmq_setopt(s, RMQ_NAME, long_name, 64), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_setopt(s, RMQ_NAME, long_name, 63), 0);
	/* with its NUL, as a C string */
	ck_assert_int_eq(rmq_setopt(s, RMQ_NAME, "ok-1_x", 7), 0);
	len = sizeof(got);
	ck_assert_int_eq(rmq_getopt(s, RMQ_NAME, got, &len), 0);
	ck_assert_str_eq(got, "ok-1_x");
	len = sizeof(got);
	ck_assert_int_eq(rmq_getopt(s, RMQ_DOMAIN_NAME, got, &len), 0);
	ck_assert_str_eq(got, "");
	ck_assert_int_eq(rmq_bind(s, bind_addr("tcp", bep, sizeof(bep))), 0);
	/* the domain was chosen with the name: too late to change it */
	ck_assert_int_eq(rmq_setopt(s, RMQ_NAME, "other", 5), -RMQ_EFSM);
	len = sizeof(got);
	ck_assert_int_eq(rmq_getopt(s, RMQ_DOMAIN_NAME, got, &len), 0);
	ck_assert_str_eq(got, "lo"); /* FI_TCP_IFACE=lo in the test env */
	close_all(ctx, s);
}
END_TEST

/* A context is thread-safe: two threads, a socket each, one context. */
#include <pthread.h>

#define NTHREAD_MSGS 2000

struct thr {
	rmq_ctx    *ctx;
	const char *prov;
	char        ep[256];
	int         ready; /* set when ep is bound */
	int         fails;
	pthread_mutex_t lock;
	pthread_cond_t  cond;
};

static void *
thr_server(void *arg)
{
	struct thr *t = arg;
	rmq_socket *s;
	char        bep[64];
	size_t      len = sizeof(t->ep);
	uint32_t    v, i;

	if (rmq_socket_open(t->ctx, RMQ_PAIR, &s) != 0 ||
	    rmq_bind(s, bind_addr(t->prov, bep, sizeof(bep))) != 0) {
		t->fails++;
		return NULL;
	}
	rmq_getopt(s, RMQ_LAST_ENDPOINT, t->ep, &len);
	pthread_mutex_lock(&t->lock);
	t->ready = 1;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	for (i = 0; i < NTHREAD_MSGS; i++) {
		if (rmq_recv(s, &v, sizeof(v), 0) != sizeof(v) || v != i ||
		    rmq_send(s, &v, sizeof(v), 0) != sizeof(v)) {
			t->fails++;
			break;
		}
	}
	rmq_close(s);
	return NULL;
}

static void
threads_one_ctx(const char *prov)
{
	struct thr  t = {.prov = prov};
	pthread_t   th;
	rmq_socket *s;
	uint32_t    i, v;

	pthread_mutex_init(&t.lock, NULL);
	pthread_cond_init(&t.cond, NULL);
	ck_assert_int_eq(rmq_ctx_new(&t.ctx, NULL), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, thr_server, &t), 0);
	pthread_mutex_lock(&t.lock);
	while (!t.ready && t.fails == 0)
		pthread_cond_wait(&t.cond, &t.lock);
	pthread_mutex_unlock(&t.lock);
	ck_assert_int_eq(rmq_socket_open(t.ctx, RMQ_PAIR, &s), 0);
	ck_assert_int_eq(rmq_connect(s, t.ep), 0);
	for (i = 0; i < NTHREAD_MSGS; i++) {
		ck_assert_int_eq(rmq_send(s, &i, sizeof(i), 0), sizeof(i));
		ck_assert_int_eq(rmq_recv(s, &v, sizeof(v), 0), sizeof(v));
		ck_assert_uint_eq(v, i);
	}
	ck_assert_int_eq(rmq_close(s), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(t.fails, 0);
	ck_assert_int_eq(rmq_ctx_destroy(t.ctx), 0);
}

START_TEST(test_threads_share_a_context_shm)
{
	threads_one_ctx("shm");
}
END_TEST

START_TEST(test_threads_share_a_context_tcp)
{
	threads_one_ctx("tcp");
}
END_TEST

/* ---- rmq_ctx_shutdown: blocked calls return, later ones fail ---- */

struct blocked {
	rmq_socket *s;
	int         poll;   /* wait in rmq_poll instead of rmq_recv */
	ssize_t     rc;
	double      t;      /* when it returned */
};

static void *
block_in(void *arg)
{
	struct blocked *b = arg;
	rmq_pollitem    it = {.socket = b->s, .events = RMQ_POLLIN};
	char            buf[16];

	b->rc = b->poll ? rmq_poll(&it, 1, -1)
	                : rmq_recv(b->s, buf, sizeof(buf), 0);
	b->t  = test_now();
	return NULL;
}

/* _i: provider.  A PULL with nobody pushing and a PAIR with a silent
 * peer wait forever (one in rmq_recv, one in rmq_poll); rmq_ctx_shutdown
 * from another thread ends both with -RMQ_ECLOSED. */
static void
shutdown_ends_waits(const char *prov)
{
	rmq_ctx       *ctx, *other;
	rmq_socket    *pull, *pair, *peer;
	struct blocked b[2], pb;
	pthread_t      th[2], pth;
	char           bep[64], ep[256];
	size_t         len = sizeof(ep);
	double         t0;
	int            k, one = 1, tmo = 1500;

	ck_assert_int_eq(rmq_ctx_new(&ctx, NULL), 0);
	ck_assert_int_eq(rmq_ctx_new(&other, NULL), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PULL, &pull), 0);
	ck_assert_int_eq(rmq_bind(pull, bind_addr(prov, bep, sizeof(bep))),
	                 0);
	ck_assert_int_eq(rmq_socket_open(other, RMQ_PAIR, &peer), 0);
	ck_assert_int_eq(rmq_bind(peer, bind_addr(prov, bep, sizeof(bep))),
	                 0);
	ck_assert_int_eq(rmq_getopt(peer, RMQ_LAST_ENDPOINT, ep, &len), 0);
	/* Its own thread answers the handshake (progress: inline). */
	pb = (struct blocked){.s = peer, .poll = 0};
	ck_assert_int_eq(rmq_setopt(peer, RMQ_RCVTIMEO, &tmo, sizeof(tmo)), 0);
	ck_assert_int_eq(pthread_create(&pth, NULL, block_in, &pb), 0);
	ck_assert_int_eq(rmq_socket_open(ctx, RMQ_PAIR, &pair), 0);
	ck_assert_int_eq(rmq_connect(pair, ep), 0);
	b[0] = (struct blocked){.s = pull, .poll = 0};
	b[1] = (struct blocked){.s = pair, .poll = 1};
	for (k = 0; k < 2; k++)
		ck_assert_int_eq(pthread_create(&th[k], NULL, block_in, &b[k]),
		                 0);
	usleep(300000); /* both asleep by now */
	t0 = test_now();
	ck_assert_int_eq(rmq_ctx_shutdown(ctx), 0);
	ck_assert_int_eq(rmq_ctx_shutdown(ctx), 0); /* again: no harm */
	for (k = 0; k < 2; k++) {
		ck_assert_int_eq(pthread_join(th[k], NULL), 0);
		ck_assert_msg(b[k].rc == -RMQ_ECLOSED, "%s: %s returned %zd",
		              prov, b[k].poll ? "rmq_poll" : "rmq_recv",
		              b[k].rc);
		ck_assert_msg(b[k].t - t0 < 1.0, "%s: %s took %.3f s", prov,
		              b[k].poll ? "rmq_poll" : "rmq_recv", b[k].t - t0);
	}
	/* Later calls fail alike, even those that would not block. */
	ck_assert_int_eq(rmq_send(pair, "x", 1, RMQ_DONTWAIT), -RMQ_ECLOSED);
	ck_assert_int_eq(rmq_recv(pull, bep, sizeof(bep), RMQ_DONTWAIT),
	                 -RMQ_ECLOSED);
	ck_assert_int_eq(rmq_connect(pull, ep), -RMQ_ECLOSED);
	ck_assert_int_eq(rmq_bind(pair, bind_addr(prov, bep, sizeof(bep))),
	                 -RMQ_ECLOSED);
	ck_assert_str_eq(rmq_strerror(-RMQ_ECLOSED),
	                 rmq_strerror(-RMQ_ECLOSED));
	/* The other context goes on (its receive times out as set, or sees
	 * our PAIR go); ours closes and goes. */
	ck_assert_int_eq(pthread_join(pth, NULL), 0);
	ck_assert_msg(pb.rc == -RMQ_EAGAIN || pb.rc == -RMQ_ECONNRESET,
	              "%s: the other context's rmq_recv: %zd", prov, pb.rc);
	ck_assert_int_eq(rmq_setopt(peer, RMQ_LINGER, &one, sizeof(one)), 0);
	ck_assert_int_eq(rmq_close(pull), 0);
	ck_assert_int_eq(rmq_close(pair), 0);
	ck_assert_int_eq(rmq_ctx_destroy(ctx), 0);
	ck_assert_int_eq(rmq_close(peer), 0);
	ck_assert_int_eq(rmq_ctx_destroy(other), 0);
}

START_TEST(test_shutdown_ends_waits_shm)
{
	shutdown_ends_waits("shm");
}
END_TEST

START_TEST(test_shutdown_ends_waits_tcp)
{
	shutdown_ends_waits("tcp");
}
END_TEST

static Suite *
ctx_suite(void)
{
	Suite *s  = suite_create("ctx");
	TCase *tc = tcase_create("multiprocess");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_yaml_thresholds_choose_paths);
	tcase_add_test(tc, test_yaml_provider_for_fabric_endpoints);
	tcase_add_test(tc, test_bad_yaml_fails_cleanly);
	tcase_add_test(tc, test_missing_provider);
	tcase_add_test(tc, test_unavailable_provider_in_config);
	tcase_add_test(tc, test_pattern_sections);
	tcase_add_test(tc, test_threads_share_a_context_shm);
	tcase_add_test(tc, test_threads_share_a_context_tcp);
	tcase_add_test(tc, test_shutdown_ends_waits_shm);
	tcase_add_test(tc, test_shutdown_ends_waits_tcp);
	tcase_add_test(tc, test_provider_order);
	tcase_add_test(tc, test_interface_knob_tcp);
	tcase_add_test(tc, test_interface_knob_sockets);
	tcase_add_test(tc, test_interface_missing);
	tcase_add_test(tc, test_named_thresholds);
	tcase_add_test(tc, test_name_option);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(ctx_suite)
