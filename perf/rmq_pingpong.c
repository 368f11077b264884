/*
 * rmq_pingpong: one-way latency and bandwidth between two processes, per
 * message size, with the path librmq took (see rmq_pingpong(1)).
 *
 * Roles: the "measuring" side sends a plan (size, iterations) and then pings;
 * the "echo" side follows the plan and pongs, so only the measuring side
 * needs -S/-I.  Under mpirun rank 0 binds and measures, rank 1 connects and
 * echoes; standalone --server echoes and --connect measures; --local forks
 * both, pinned to two CPUs.
 *
 * one-way latency = round trip / 2 for each iteration; p50/p99 over the
 * timed iterations; MB/s = size / mean one-way time (1 MB = 10^6 bytes),
 * as fi_pingpong and osu_latency count.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pp_common.h"
#include "rmq.h"

#define PLAN_MAGIC 0x52504d50u /* "PMPR" */
#define CMD_SIZE   1
#define CMD_DONE   2
#define CMD_CHECK  0x100 /* with CMD_SIZE: echo every ping's own bytes */

struct plan {
	uint32_t magic;
	uint32_t cmd;
	uint64_t size;
	uint64_t iters;
};

struct opts {
	const char *prov;
	const char *host;
	const char *connect;
	int         port;
	bool        server, local, csv, reqrep, check;
	int         rndv; /* 0, RMQ_PATH_RNDV_READ or RMQ_PATH_RNDV_SEND */
	int         iters, warmup;
	int         cpus[2];
	size_t      sizes[PP_MAX_SIZES];
	int         nsizes;
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: rmq_pingpong [-p shm|tcp|sockets|verbs|efa] "
	        "[-S SIZE[,SIZE...]|all] [-I ITER]\n"
	        "                    [-W WARMUP] [--csv] [--reqrep] "
	        "[--check] [--rndv read|send]\n"
	        "                    [--server [-B HOST] [-P PORT] | "
	        "--connect HOST:PORT | --local [--cpus A,B]]\n"
	        "Under mpirun -np 2 no role option is needed (rank 0 binds "
	        "and measures).\n");
}

static int
env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v != NULL ? atoi(v) : dflt;
}

/* Rank and size from Open MPI, PMIx or PMI (MPICH hydra); -1 if none. */
static void
mpi_rank(int *rank, int *size)
{
	*rank = env_int("OMPI_COMM_WORLD_RANK",
	                env_int("PMIX_RANK", env_int("PMI_RANK", -1)));
	*size = env_int("OMPI_COMM_WORLD_SIZE",
	                env_int("PMI_SIZE", *rank >= 0 ? 2 : -1));
}

/* A port both ranks derive from the job id, so no exchange is needed. */
static int
job_port(void)
{
	static const char *const vars[] = {
	    "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
	    "OMPI_MCA_orte_ess_jobid", "PMI_JOBID", "SLURM_JOB_ID", NULL};
	uint32_t    h = 2166136261u;
	const char *v = NULL;
	int         i;

	for (i = 0; vars[i] != NULL && v == NULL; i++)
		v = getenv(vars[i]);
	if (v == NULL)
		return 25555;
	for (; *v != '\0'; v++)
		h = (h ^ (uint8_t) *v) * 16777619u;
	return 20000 + (int) (h % 20000);
}

static void
pin(int cpu)
{
	int rc = pp_pin(cpu);

	if (rc != 0)
		fprintf(stderr, "rmq_pingpong: cannot pin to CPU %d: %s\n", cpu,
		        strerror(-rc));
}

static int
die(const char *what, long rc)
{
	fprintf(stderr, "rmq_pingpong: %s: %s\n", what,
	        rmq_strerror((int) rc));
	return 1;
}

static bool
verify(const uint8_t *b, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != (uint8_t) (seed + i * 7))
			return false;
	return true;
}

/*
 * Echo side: follow the plans until DONE.  Like fi_pingpong and
 * osu_latency it receives into one buffer and sends from another, so each
 * direction reads a source the CPU has not just dirtied.
 */
static int
echo(rmq_socket *s)
{
	struct plan p;
	uint8_t    *buf = NULL, *sbuf = NULL;
	size_t      cap = 0;
	uint64_t    i;
	ssize_t     rc;

	for (;;) {
		rc = rmq_recv(s, &p, sizeof(p), 0);
		if (rc < 0)
			return die("recv plan", rc);
		if (rc != (ssize_t) sizeof(p) || p.magic != PLAN_MAGIC) {
			fprintf(stderr, "rmq_pingpong: bad plan message\n");
			return 1;
		}
		rc = rmq_send(s, &p, sizeof(p), 0);
		if (rc < 0)
			return die("send ack", rc);
		if ((p.cmd & 0xff) == CMD_DONE)
			break;
		if (p.size > cap) {
			free(buf);
			free(sbuf);
			cap  = p.size;
			buf  = malloc(cap);
			sbuf = malloc(cap);
			if (buf == NULL || sbuf == NULL)
				return die("malloc", -ENOMEM);
			memset(buf, 0, cap);
		}
		for (i = 0; i < p.iters; i++) {
			rc = rmq_recv(s, buf, p.size, 0);
			if (rc < 0 || (size_t) rc != p.size) {
				rc = die("recv", rc < 0 ? rc : -EPROTO);
				goto out;
			}
			/* The pong carries the ping's bytes: every time when
			 * checking, else once per size (the anchor's way). */
			if (i == 0 || (p.cmd & CMD_CHECK))
				memcpy(sbuf, buf, p.size);
			rc = rmq_send(s, sbuf, p.size, 0);
			if (rc < 0) {
				rc = die("send", rc);
				goto out;
			}
		}
	}
	rc = 0;
out:
	free(buf);
	free(sbuf);
	return (int) rc;
}

static int
plan_send(rmq_socket *s, uint32_t cmd, uint64_t size, uint64_t iters)
{
	struct plan p = {PLAN_MAGIC, cmd, size, iters}, a;
	ssize_t     rc;

	rc = rmq_send(s, &p, sizeof(p), 0);
	if (rc >= 0)
		rc = rmq_recv(s, &a, sizeof(a), 0);
	if (rc >= 0 && (rc != (ssize_t) sizeof(a) || a.magic != PLAN_MAGIC))
		rc = -EPROTO;
	return rc < 0 ? (int) rc : 0;
}

static int
main_path(const struct rmq_stats *a, const struct rmq_stats *b)
{
	uint64_t best = 0;
	int      i, path = 0;

	for (i = 0; i < RMQ_PATH_MAX; i++)
		if (b->sent_msgs[i] - a->sent_msgs[i] > best) {
			best = b->sent_msgs[i] - a->sent_msgs[i];
			path = i;
		}
	return path;
}

static int
measure(rmq_socket *s, const struct opts *o, const char *what)
{
	struct rmq_stats st0, st1;
	uint8_t         *sb = NULL, *rb = NULL;
	double          *lat = NULL, t0;
	size_t           max = 0, size;
	ssize_t          rc;
	char             prov[64] = "";
	size_t           plen     = sizeof(prov);
	int              k, i, iters, warm, ret = 1;

	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	sb = malloc(max ? max : 1);
	rb = malloc(max ? max : 1);
	if (sb == NULL || rb == NULL)
		goto out;
	rmq_getopt(s, RMQ_PROVIDER_NAME, prov, &plen);
	if (o->csv)
		printf(PP_CSV_HEADER "\n");
	else
		printf("# rmq_pingpong %s: provider %s, pattern %s, %s\n"
		       "# %10s %8s %10s %10s %10s %10s  %s\n",
		       rmq_version(), prov, o->reqrep ? "req/rep" : "pair",
		       what, "size", "iters", "p50_us", "p99_us", "avg_us",
		       "MB/s", "path");
	fflush(stdout);
	for (k = 0; k < o->nsizes; k++) {
		size  = o->sizes[k];
		iters = o->iters > 0 ? o->iters : size <= 65536 ? 10000 : 1000;
		warm  = o->warmup >= 0 ? o->warmup
		                      : (iters / 10 > 10 ? iters / 10 : 10);
		free(lat);
		lat = malloc((size_t) iters * sizeof(*lat));
		if (lat == NULL)
			goto out;
		pp_fill(sb, size, (uint64_t) k);
		rc = plan_send(s, CMD_SIZE | (o->check ? CMD_CHECK : 0), size,
		               (uint64_t) (iters + warm));
		if (rc < 0) {
			die("plan", rc);
			goto out;
		}
		for (i = 0; i < warm + iters; i++) {
			if (i == warm)
				rmq_stats(s, &st0);
			t0 = pp_now_us();
			rc = rmq_send(s, sb, size, 0);
			if (rc >= 0)
				rc = rmq_recv(s, rb, size, 0);
			if (rc < 0) {
				die("ping", rc);
				goto out;
			}
			if (i >= warm)
				lat[i - warm] = (pp_now_us() - t0) / 2;
			if ((size_t) rc != size ||
			    (o->check && !verify(rb, size, (uint64_t) k))) {
				fprintf(stderr,
				        "rmq_pingpong: %zu B: corrupt echo\n",
				        size);
				goto out;
			}
		}
		rmq_stats(s, &st1);
		pp_report(o->csv, size, lat, iters,
		          rmq_path_name(main_path(&st0, &st1)));
		fflush(stdout);
	}
	rc  = plan_send(s, CMD_DONE, 0, 0);
	ret = rc < 0 ? die("done", rc) : 0;
out:
	free(sb);
	free(rb);
	free(lat);
	return ret;
}

/* One side of the run.  endpoint_out: where a port-0 bind landed. */
static int
run(const struct opts *o, const char *endpoint, bool do_bind, bool measuring,
    int notify_fd, const char *what)
{
	rmq_ctx    *ctx = NULL;
	rmq_socket *s   = NULL;
	char        ep[256];
	size_t      len = sizeof(ep);
	int         rc, ret = 1, type, linger = 5000, cto = 30000;

	rc = rmq_ctx_new(&ctx, NULL);
	if (rc != 0)
		return die("rmq_ctx_new", rc);
	type = o->reqrep ? (measuring ? RMQ_REQ : RMQ_REP) : RMQ_PAIR;
	rc   = rmq_socket_open(ctx, type, &s);
	if (rc != 0) {
		die("rmq_socket_open", rc);
		goto out;
	}
	rmq_setopt(s, RMQ_LINGER, &linger, sizeof(linger));
	if (o->rndv != 0 &&
	    (rc = rmq_setopt(s, RMQ_RNDV_PATH, &o->rndv, sizeof(o->rndv))) != 0) {
		die("--rndv", rc);
		goto out;
	}
	rmq_setopt(s, RMQ_CONNECT_TIMEOUT, &cto, sizeof(cto));
	rc = do_bind ? rmq_bind(s, endpoint) : rmq_connect(s, endpoint);
	if (rc != 0) {
		die(do_bind ? "bind" : "connect", rc);
		goto out;
	}
	if (do_bind && notify_fd >= 0) {
		rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len);
		if (write(notify_fd, ep, len) != (ssize_t) len)
			goto out;
		close(notify_fd);
	} else if (do_bind && !o->csv && measuring) {
		rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len);
		fprintf(stderr, "rmq_pingpong: listening on %s\n", ep);
	}
	ret = measuring ? measure(s, o, what) : echo(s);
out:
	if (s != NULL)
		rmq_close(s);
	rmq_ctx_destroy(ctx);
	return ret;
}

static int
run_local(const struct opts *o)
{
	char  ep[256] = "", addr[128], what[64];
	int   pfd[2], status = 0, ret;
	pid_t pid;

	if (pipe(pfd) != 0)
		return die("pipe", -errno);
	snprintf(addr, sizeof(addr), "%s://127.0.0.1:0", o->prov);
	pid = fork();
	if (pid < 0)
		return die("fork", -errno);
	if (pid == 0) {
		close(pfd[0]);
		pin(o->cpus[1]);
		_exit(run(o, addr, true, false, pfd[1], ""));
	}
	close(pfd[1]);
	pin(o->cpus[0]);
	if (read(pfd[0], ep, sizeof(ep) - 1) <= 0) {
		close(pfd[0]);
		waitpid(pid, &status, 0);
		fprintf(stderr, "rmq_pingpong: echo side failed to bind\n");
		return 1;
	}
	close(pfd[0]);
	snprintf(what, sizeof(what), "local, cpus %d,%d", o->cpus[0],
	         o->cpus[1]);
	ret = run(o, ep, false, true, -1, what);
	if (ret != 0)
		kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		ret = 1;
	return ret;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"server", no_argument, NULL, 's'},
	    {"connect", required_argument, NULL, 'c'},
	    {"local", no_argument, NULL, 'l'},
	    {"csv", no_argument, NULL, 'v'},
	    {"cpus", required_argument, NULL, 'u'},
	    {"reqrep", no_argument, NULL, 'r'},
	    {"check", no_argument, NULL, 'k'},
	    {"rndv", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.prov = "shm", .host = "127.0.0.1", .port = -1,
	                 .iters = 0, .warmup = -1, .cpus = {0, 1}};
	char        ep[256], what[64];
	int         c, rank, size;

	pp_parse_sizes("all", o.sizes, &o.nsizes);
	while ((c = getopt_long(argc, argv, "p:S:I:W:B:P:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			o.prov = optarg;
			break;
		case 'S':
			if (pp_parse_sizes(optarg, o.sizes, &o.nsizes) != 0) {
				fprintf(stderr, "rmq_pingpong: bad -S %s\n",
				        optarg);
				return 2;
			}
			break;
		case 'I':
			o.iters = atoi(optarg);
			break;
		case 'W':
			o.warmup = atoi(optarg);
			break;
		case 'B':
			o.host = optarg;
			break;
		case 'P':
			o.port = atoi(optarg);
			break;
		case 's':
			o.server = true;
			break;
		case 'c':
			o.connect = optarg;
			break;
		case 'l':
			o.local = true;
			break;
		case 'v':
			o.csv = true;
			break;
		case 'r':
			o.reqrep = true;
			break;
		case 'k':
			o.check = true;
			break;
		case 'R':
			if (strcmp(optarg, "read") == 0)
				o.rndv = RMQ_PATH_RNDV_READ;
			else if (strcmp(optarg, "send") == 0)
				o.rndv = RMQ_PATH_RNDV_SEND;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'u':
			if (sscanf(optarg, "%d,%d", &o.cpus[0], &o.cpus[1]) != 2) {
				usage(stderr);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o.local)
		return run_local(&o);
	if (o.server) {
		snprintf(ep, sizeof(ep), "%s://%s:%d", o.prov, o.host,
		         o.port < 0 ? 25555 : o.port);
		return run(&o, ep, true, false, -1, "");
	}
	if (o.connect != NULL) {
		snprintf(ep, sizeof(ep), "%s://%s", o.prov, o.connect);
		return run(&o, ep, false, true, -1, "standalone");
	}
	mpi_rank(&rank, &size);
	if (rank < 0) {
		usage(stderr);
		return 2;
	}
	if (size != 2) {
		fprintf(stderr, "rmq_pingpong: run with exactly 2 ranks (%d)\n",
		        size);
		return 2;
	}
	snprintf(ep, sizeof(ep), "%s://%s:%d", o.prov, o.host,
	         o.port < 0 ? job_port() : o.port);
	snprintf(what, sizeof(what), "mpirun, 2 ranks");
	return run(&o, ep, rank == 0, rank == 0, -1, what);
}
