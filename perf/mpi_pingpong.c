/*
 * mpi_pingpong: the MPI anchor for rmq_pingpong, as osu_latency measures
 * it.  Under mpirun -np 2, rank 0 MPI_Sends SIZE bytes to rank 1 and
 * MPI_Recvs them back, ITER times per size after WARMUP untimed round
 * trips; rank 1 echoes.  Whatever the MPI library picks underneath (with
 * Open MPI, --mca btl self,vader: shared memory) is what is measured.
 *
 * Conventions as rmq_pingpong (bench.h): one clock read per round trip,
 * scaled so that the mean is exactly the clock_gettime(CLOCK_MONOTONIC)
 * span of the whole timed loop / (2 * ITER); one-way latency = round trip
 * / 2; p50/p99 over the timed round trips; MB/s = size / mean one-way time
 * (1 MB = 10^6 bytes).  Each side receives into one buffer and sends from
 * another, as osu_latency and fi_pingpong do.  The output is rmq_pingpong's
 * table or CSV, so perf/compare.sh reads all of them alike.
 *
 * Placement is mpirun's business (--bind-to core, --cpu-set): no pinning
 * here.
 *
 * --rmq PROV: librmq in the same two processes, alternated with MPI.  The
 * ranks open a PAIR over PROV (rank 0 binds, MPI carries the endpoint to
 * rank 1; two ranks on one host take librmq's local path unless
 * RMQ_LOCAL=0), and each size's round trips go in BLOCKS blocks per
 * library, MPI's and librmq's in turn (ABBA: MPI first in even blocks),
 * so the host's scheduling phases, which on a virtual machine outlast a
 * block and set a run's figures twofold, fall on both alike.  --fi PROV
 * adds a third: a bare libfabric ping-pong between the same ranks as
 * fi_pingpong runs it (an RDM endpoint with FI_MSG, fi_inject up to the
 * provider's inject size and fi_send above, one fi_recv per message into
 * its buffer, the CQ spun on), the order rotated by one each block.  Then
 * a row per library (path mpi, the path librmq took, fi), and comments
 * with librmq's mean over each other's, block by block: median [min-max]
 * (with --fi also over the better of the two in each block).
 *
 * --fi-wait gives the bare ping-pong's CQ a wait fd (FI_WAIT_FD), as
 * librmq's default asks for one where the provider has it so that its
 * blocking calls can sleep; the CQ is still only spun on.  Then librmq
 * with its default stands beside a bare loop that pays what a wait fd
 * costs the provider, and librmq with progress.wait_fd false
 * (RMQ_PROGRESS_WAIT_FD=0) beside the plain --fi.
 *
 * --page-aligned puts every library's send and receive buffer at the
 * start of a page (posix_memalign), as many HPC codes allocate them.
 * --zero-copy has librmq use its zero-copy calls: rank 0 sends with
 * rmq_send and takes the reply with rmq_msg_recv, rank 1 echoes the
 * message it got with rmq_msg_recv by rmq_msg_send.
 */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "bench.h"
#include "fi_api.h"
#include "rmq.h"
#include "rmq_perf.h"

#define PROG "mpi_pingpong"
#define TAG  1

struct opts {
	bool        csv;
	int         iters, warmup; /* 0 / -1: by size */
	const char *rmq;    /* --rmq PROV, or NULL */
	const char *fi;     /* --fi PROV (with --rmq), or NULL */
	bool        fi_wait; /* --fi-wait: its CQ has a wait fd */
	bool        aligned; /* --page-aligned buffers */
	bool        zc;      /* --zero-copy: librmq's rmq_msg_* calls */
	int         blocks; /* -B: per size and library, with --rmq */
	size_t sizes[PP_MAX_SIZES];
	int    nsizes;
};

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: mpirun -np 2 " PROG " [-S SIZE[,SIZE...]|all] "
	        "[-I ITER] [-W WARMUP] [--csv]\n"
	        "       mpirun -np 2 " PROG " --rmq PROV [--fi PROV [--fi-wait]] "
	        "[-B BLOCKS] [--page-aligned] [--zero-copy] [-S ...] [-I ITER] "
	        "[-W WARMUP] [--csv]\n"
	        "       " PROG " --version | --help\n"
	        "MPI_Send/MPI_Recv ping-pong between ranks 0 (measures) and "
	        "1 (echoes).\n"
	        "  -S         sizes in bytes, k/m suffix allowed; all = 1 B .. "
	        "4 MiB, powers of two\n"
	        "             (default all)\n"
	        "  -I         timed round trips per size (default 100000 up to "
	        "4 KiB, 10000 up to\n"
	        "             64 KiB, 1000 above)\n"
	        "  -W         untimed warm-up round trips (default 1000, 100 "
	        "above 64 KiB)\n"
	        "  --csv      print size,lat_p50_us,lat_p99_us,mbps,path\n"
	        "  --rmq      also librmq (a PAIR over that provider) between "
	        "the same ranks,\n"
	        "             alternated with MPI in blocks; a row each, and "
	        "librmq / MPI\n"
	        "  --fi       with --rmq: a bare libfabric ping-pong over that "
	        "provider too\n"
	        "             (fi_inject up to its inject size, else fi_send; "
	        "one fi_recv each)\n"
	        "  --fi-wait  with --fi: give its CQ a wait fd (FI_WAIT_FD), "
	        "as librmq's\n"
	        "             default asks for one; still only spun on\n"
	        "  -B         blocks per size and library with --rmq (default "
	        "20)\n"
	        "  --page-aligned  every library's buffers start a page\n"
	        "  --zero-copy     with --rmq: rank 1 echoes with rmq_msg_recv "
	        "and\n"
	        "             rmq_msg_send, rank 0 receives with rmq_msg_recv\n");
}

/* compare.sh's default -I, so that the anchor runs as long as its rows. */
static int
default_iters(size_t size)
{
	return size <= 4096 ? 100000 : size <= 65536 ? 10000 : 1000;
}

/* The first line of MPI_Get_library_version (Open MPI's runs on). */
static const char *
mpi_version(void)
{
	static char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int         len;

	/* One of the few calls allowed before MPI_Init: --version needs
	 * no mpirun. */
	MPI_Get_library_version(v, &len);
	v[strcspn(v, "\r\n")] = '\0';
	return v;
}

/* n round trips of size bytes over MPI; rank 0 stamps each (st). */
static void
mpi_rounds(int rank, size_t size, int n, uint8_t *sb, uint8_t *rb,
           struct pp_stamps *st)
{
	int m = (int) size, i;

	for (i = 0; i < n; i++) {
		if (rank == 0) {
			MPI_Send(sb, m, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
			MPI_Recv(rb, m, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(rb, m, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
			MPI_Send(sb, m, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
		}
		if (st != NULL)
			pp_stamp(st, i);
	}
}

/*
 * One size, both ranks: the same counts on both sides, from the same
 * options, so no plan has to be exchanged.  Rank 0 fills lat[0..iters).
 * MPI's default error handler aborts the job, so there is nothing to check.
 */
static void
pingpong(int rank, size_t size, int iters, int warm, uint8_t *sb,
         uint8_t *rb, struct pp_stamps *st, double *lat)
{
	/* Neither rank's setup for this size is timed. */
	MPI_Barrier(MPI_COMM_WORLD);
	mpi_rounds(rank, size, warm, sb, rb, NULL);
	if (rank == 0)
		pp_stamps_start(st);
	mpi_rounds(rank, size, iters, sb, rb, rank == 0 ? st : NULL);
	if (rank == 0)
		pp_stamps_finish(st, lat);
}

/* ---- --rmq: librmq beside MPI in the same two processes ---- */

static void
rmq_die(int rank, const char *what, long rc)
{
	fprintf(stderr, PROG " (rank %d): librmq: %s: %s\n", rank, what,
	        rmq_strerror((int) rc));
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* A PAIR between the ranks: rank 0 binds on 127.0.0.1 (both ranks on one
 * host), MPI carries its endpoint to rank 1, which connects. */
static rmq_socket *
rmq_pair_open(const char *prov, int rank, rmq_ctx **ctx)
{
	char        ep[256] = "";
	size_t      len     = sizeof(ep);
	rmq_socket *s       = NULL;
	int         rc, linger = 5000;

	rc = rmq_ctx_new(ctx, NULL);
	if (rc == 0)
		rc = rmq_socket_open(*ctx, RMQ_PAIR, &s);
	if (rc == 0)
		rc = rmq_setopt(s, RMQ_LINGER, &linger, sizeof(linger));
	if (rank == 0) {
		snprintf(ep, sizeof(ep), "%s://127.0.0.1:0", prov);
		if (rc == 0)
			rc = rmq_bind(s, ep);
		if (rc == 0)
			rc = rmq_getopt(s, RMQ_LAST_ENDPOINT, ep, &len);
		if (rc != 0)
			ep[0] = '\0'; /* tells rank 1 there is none */
	}
	MPI_Bcast(ep, (int) sizeof(ep), MPI_CHAR, 0, MPI_COMM_WORLD);
	ep[sizeof(ep) - 1] = '\0';
	if (rank == 1 && rc == 0)
		rc = ep[0] == '\0' ? -RMQ_EINVAL : rmq_connect(s, ep);
	if (rc != 0)
		rmq_die(rank, rank == 0 ? "bind" : "connect", rc);
	return s;
}

/* One message in, by rmq_recv or (zc) rmq_msg_recv: rank 1 echoes the
 * latter with rmq_msg_send, rank 0 frees it. */
static void
rmq_take(rmq_socket *s, int rank, size_t size, uint8_t *rb, bool zc)
{
	rmq_msg *m;
	ssize_t  rc;

	rc = zc ? rmq_msg_recv(s, &m, 0) : rmq_recv(s, rb, size, 0);
	if (rc < 0)
		rmq_die(rank, "recv", rc);
	if ((zc ? rmq_msg_size(m) : (size_t) rc) != size)
		rmq_die(rank, "recv: a short message", -RMQ_EPROTO);
	if (!zc)
		return;
	if (rank == 0) {
		rmq_msg_free(m);
		return;
	}
	if ((rc = rmq_msg_send(s, m, 0)) < 0)
		rmq_die(rank, "rmq_msg_send", rc);
}

/* n round trips of size bytes over librmq; rank 0 stamps each (st). */
static void
rmq_rounds(rmq_socket *s, int rank, size_t size, int n, uint8_t *sb,
           uint8_t *rb, bool zc, struct pp_stamps *st)
{
	ssize_t rc;
	int     i;

	for (i = 0; i < n; i++) {
		if (rank == 0 && (rc = rmq_send(s, sb, size, 0)) < 0)
			rmq_die(rank, "send", rc);
		rmq_take(s, rank, size, rb, zc);
		if (rank == 1 && !zc && (rc = rmq_send(s, sb, size, 0)) < 0)
			rmq_die(rank, "send", rc);
		if (st != NULL)
			pp_stamp(st, i);
	}
}

/* ---- --fi: a bare libfabric ping-pong, as fi_pingpong does it ---- */

struct fip {
	struct fi_info    *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av     *av;
	struct fid_cq     *cq;
	struct fid_ep     *ep;
	fi_addr_t          peer;
	struct fi_context2 rctx, sctx;
	bool               rdone, sdone;
	uint8_t           *rbuf;
	size_t             cap;
	int                rank;
};

static void
fi_die(int rank, const char *what, long rc)
{
	fprintf(stderr, PROG " (rank %d): libfabric: %s: %s\n", rank, what,
	        fi_strerror((int) (rc < 0 ? -rc : rc)));
	MPI_Abort(MPI_COMM_WORLD, 1);
}

#define FIP_CK(f, call)                                                    \
	do {                                                               \
		long rc_ = (long) (call);                                  \
		if (rc_ != 0)                                              \
			fi_die((f)->rank, #call, rc_);                     \
	} while (0)

/* One completion if there is one: which operation it ends. */
static void
fip_poll(struct fip *f)
{
	struct fi_cq_entry     e;
	struct fi_cq_err_entry err;
	ssize_t                n = fi_cq_read(f->cq, &e, 1);

	if (n == -FI_EAGAIN)
		return;
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		(void) fi_cq_readerr(f->cq, &err, 0);
		fi_die(f->rank, "a completion", err.err != 0 ? err.err : FI_EIO);
	}
	if (n != 1)
		fi_die(f->rank, "fi_cq_read", n);
	if (e.op_context == &f->rctx)
		f->rdone = true;
	else if (e.op_context == &f->sctx)
		f->sdone = true;
}

/* An RDM endpoint of prov (FI_MSG only), its address swapped over MPI, a
 * receive of cap bytes posted. */
static void
fip_open(struct fip *f, const char *prov, bool wait_fd, int rank, size_t cap)
{
	struct fi_info   *h  = fi_allocinfo();
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT};
	char              name[256] = "", other[256];
	size_t            len = sizeof(name);
	int               ret;

	f->rank = rank;
	f->cap  = cap > 0 ? cap : 1;
	f->rbuf = malloc(f->cap);
	if (h == NULL || f->rbuf == NULL)
		fi_die(rank, "memory", FI_ENOMEM);
	h->caps                   = FI_MSG;
	h->mode                   = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type          = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup(prov);
	FIP_CK(f, fi_getinfo(rmq_fi_api(), NULL, NULL, 0, h, &f->info));
	fi_freeinfo(h);
	FIP_CK(f, fi_fabric(f->info->fabric_attr, &f->fab, NULL));
	FIP_CK(f, fi_domain(f->fab, f->info, &f->dom, NULL));
	FIP_CK(f, fi_av_open(f->dom, &aa, &f->av, NULL));
	if (wait_fd)
		ca.wait_obj = FI_WAIT_FD;
	ret = fi_cq_open(f->dom, &ca, &f->cq, NULL);
	if (ret != 0)
		fi_die(rank, wait_fd ? "--fi-wait: fi_cq_open with FI_WAIT_FD "
		                       "(shm has no CQ wait fd)"
		                     : "fi_cq_open", ret);
	FIP_CK(f, fi_endpoint(f->dom, f->info, &f->ep, NULL));
	FIP_CK(f, fi_ep_bind(f->ep, &f->av->fid, 0));
	FIP_CK(f, fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV));
	FIP_CK(f, fi_enable(f->ep));
	FIP_CK(f, fi_getname(&f->ep->fid, name, &len));
	MPI_Sendrecv(name, (int) sizeof(name), MPI_BYTE, 1 - rank, TAG, other,
	             (int) sizeof(other), MPI_BYTE, 1 - rank, TAG,
	             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (fi_av_insert(f->av, other, 1, &f->peer, 0, NULL) != 1)
		fi_die(rank, "fi_av_insert", FI_EINVAL);
	FIP_CK(f, fi_recv(f->ep, f->rbuf, f->cap, NULL, FI_ADDR_UNSPEC,
	                  &f->rctx));
}

static void
fip_close(struct fip *f)
{
	MPI_Barrier(MPI_COMM_WORLD); /* the last message has been taken */
	fi_close(&f->ep->fid);
	fi_close(&f->av->fid);
	fi_close(&f->cq->fid);
	fi_close(&f->dom->fid);
	fi_close(&f->fab->fid);
	fi_freeinfo(f->info);
	free(f->rbuf);
}

/* Injected up to the provider's inject size, else sent and waited for;
 * received straight into the posted buffer, then posted again. */
static void
fip_send(struct fip *f, const void *buf, size_t size)
{
	ssize_t rc;

	if (size <= f->info->tx_attr->inject_size) {
		while ((rc = fi_inject(f->ep, buf, size, f->peer)) == -FI_EAGAIN)
			fip_poll(f);
		if (rc != 0)
			fi_die(f->rank, "fi_inject", rc);
		return;
	}
	while ((rc = fi_send(f->ep, buf, size, NULL, f->peer, &f->sctx)) ==
	       -FI_EAGAIN)
		fip_poll(f);
	if (rc != 0)
		fi_die(f->rank, "fi_send", rc);
	while (!f->sdone)
		fip_poll(f);
	f->sdone = false;
}

static void
fip_recv(struct fip *f)
{
	while (!f->rdone)
		fip_poll(f);
	f->rdone = false;
	FIP_CK(f, fi_recv(f->ep, f->rbuf, f->cap, NULL, FI_ADDR_UNSPEC,
	                  &f->rctx));
}

static void
fip_rounds(struct fip *f, int rank, size_t size, int n, uint8_t *sb,
           struct pp_stamps *st)
{
	int i;

	for (i = 0; i < n; i++) {
		if (rank == 0) {
			fip_send(f, sb, size);
			fip_recv(f);
		} else {
			fip_recv(f);
			fip_send(f, sb, size);
		}
		if (st != NULL)
			pp_stamp(st, i);
	}
}

/* ---- alternating ---- */

enum { LIB_MPI, LIB_RMQ, LIB_FI, NLIB };

struct alt {
	rmq_socket      *s;
	struct fip      *f;    /* --fi, or NULL */
	int              nlib; /* 2, or 3 with --fi */
	int              blocks, per, warm;
	bool             zc;          /* --zero-copy */
	double          *lat[NLIB];   /* rank 0: blocks * per each */
	double           sum[NLIB];   /* rank 0: of each's lat */
	double          *ratio[NLIB]; /* rank 0, per block: librmq / MPI,
	                               * none, librmq / libfabric */
	double          *best;        /* librmq / the better of the two */
	struct rmq_stats st0;
};

static int
alt_alloc(struct alt *a)
{
	size_t n = (size_t) a->blocks * a->per;
	int    lib;

	for (lib = 0; lib < a->nlib; lib++) {
		a->lat[lib] = malloc(n * sizeof(double));
		if (lib != LIB_RMQ)
			a->ratio[lib] = malloc((size_t) a->blocks *
			                       sizeof(double));
		if (a->lat[lib] == NULL ||
		    (lib != LIB_RMQ && a->ratio[lib] == NULL))
			return -1;
	}
	a->best = malloc((size_t) a->blocks * sizeof(double));
	return a->best != NULL ? 0 : -1;
}

static void
alt_free(struct alt *a)
{
	int lib;

	for (lib = 0; lib < NLIB; lib++) {
		free(a->lat[lib]);
		free(a->ratio[lib]);
		a->lat[lib] = a->ratio[lib] = NULL;
	}
	free(a->best);
	a->best = NULL;
}

static void
lib_rounds(struct alt *a, int lib, int rank, size_t size, int n, uint8_t *sb,
           uint8_t *rb, struct pp_stamps *st)
{
	if (lib == LIB_MPI)
		mpi_rounds(rank, size, n, sb, rb, st);
	else if (lib == LIB_RMQ)
		rmq_rounds(a->s, rank, size, n, sb, rb, a->zc, st);
	else
		fip_rounds(a->f, rank, size, n, sb, st);
}

/*
 * One size, both ranks: blocks of per round trips, the libraries in turn,
 * the order rotated by one each block (MPI, librmq, then librmq, MPI, ...;
 * with libfabric a three-way rotation).  Rank 0 fills a->lat and, per
 * block, librmq's mean over the others'.
 */
static void
alternate(struct alt *a, int rank, size_t size, uint8_t *sb, uint8_t *rb,
          struct pp_stamps *st)
{
	double mean[NLIB], sum;
	int    b, j, lib, i;
	size_t at;

	MPI_Barrier(MPI_COMM_WORLD);
	for (lib = 0; lib < a->nlib; lib++) {
		lib_rounds(a, lib, rank, size, a->warm, sb, rb, NULL);
		a->sum[lib] = 0;
	}
	for (b = 0; b < a->blocks; b++) {
		for (j = 0; j < a->nlib; j++) {
			lib = (j + b) % a->nlib;
			if (rank == 0)
				pp_stamps_start(st);
			lib_rounds(a, lib, rank, size, a->per, sb, rb,
			           rank == 0 ? st : NULL);
			if (rank != 0)
				continue;
			at = (size_t) b * a->per;
			pp_stamps_finish(st, a->lat[lib] + at);
			for (sum = 0, i = 0; i < a->per; i++)
				sum += a->lat[lib][at + i];
			mean[lib] = sum / a->per;
			a->sum[lib] += sum;
		}
		if (rank != 0)
			continue;
		a->ratio[LIB_MPI][b] = mean[LIB_MPI] > 0
		                           ? mean[LIB_RMQ] / mean[LIB_MPI]
		                           : 0;
		a->best[b] = a->ratio[LIB_MPI][b];
		if (a->nlib > LIB_FI) {
			a->ratio[LIB_FI][b] = mean[LIB_FI] > 0
			                          ? mean[LIB_RMQ] / mean[LIB_FI]
			                          : 0;
			if (a->ratio[LIB_FI][b] > a->best[b])
				a->best[b] = a->ratio[LIB_FI][b];
		}
	}
}

static void
ratio_line(size_t size, const char *what, double all, double *r, int blocks,
           int per)
{
	qsort(r, (size_t) blocks, sizeof(*r), pp_cmp_double);
	printf("# %zu B: librmq / %s, mean one-way: %.3f over all; per block "
	       "median %.3f [%.3f-%.3f], %d blocks of %d round trips\n",
	       size, what, all, r[blocks / 2], r[0], r[blocks - 1], blocks,
	       per);
}

/* Rank 0: a row per library, then librmq's ratios; st1: librmq's stats
 * after the size's blocks, or NULL. */
static void
alternate_report(const struct opts *o, struct alt *a, size_t size,
                 const struct rmq_stats *st1)
{
	const double    *sum  = a->sum;
	const char      *path = "rmq";
	char             what[64];
	int              n = a->blocks * a->per, k;

	if (st1 != NULL && (k = rmq_perf_main_path(&a->st0, st1)) >= 0)
		path = rmq_path_name(k);
	pp_report(o->csv, size, a->lat[LIB_MPI], n, "mpi");
	pp_report(o->csv, size, a->lat[LIB_RMQ], n, path);
	if (a->nlib > LIB_FI)
		pp_report(o->csv, size, a->lat[LIB_FI], n, "fi");
	ratio_line(size, "MPI", sum[LIB_MPI] > 0 ? sum[LIB_RMQ] / sum[LIB_MPI] : 0,
	           a->ratio[LIB_MPI], a->blocks, a->per);
	if (a->nlib <= LIB_FI)
		return;
	snprintf(what, sizeof(what), "libfabric %s", o->fi);
	ratio_line(size, what, sum[LIB_FI] > 0 ? sum[LIB_RMQ] / sum[LIB_FI] : 0,
	           a->ratio[LIB_FI], a->blocks, a->per);
	ratio_line(size, "the better of the two, block by block",
	           sum[LIB_RMQ] / (sum[LIB_MPI] < sum[LIB_FI] ? sum[LIB_MPI]
	                                                       : sum[LIB_FI]),
	           a->best, a->blocks, a->per);
}

/* Rank 0, where librmq's peer is on this host: how many of the messages
 * it took were read straight from the peer's memory rather than through
 * the ring (the local path picks whichever cost less so far from 16 KiB
 * up: on this host which one does depends on the placement). */
static void
direct_report(const struct alt *a, size_t size, const struct rmq_stats *st1)
{
	uint64_t got;

	if (st1 == NULL)
		return;
	got = st1->recv_msgs[RMQ_PATH_LOCAL] - a->st0.recv_msgs[RMQ_PATH_LOCAL];
	if (got > 0)
		printf("# %zu B: librmq on rank 0 took %" PRIu64 " of %" PRIu64
		       " local messages straight from the peer's memory "
		       "(rmq_stats direct_copies), the rest through the ring\n",
		       size, st1->direct_copies - a->st0.direct_copies, got);
}

static int
run(const struct opts *o, int rank)
{
	struct pp_stamps st  = {0};
	struct alt       a   = {0};
	struct fip       f   = {0};
	uint8_t         *sb  = NULL, *rb = NULL;
	double          *lat = NULL;
	size_t           max = 1, size;
	rmq_ctx         *ctx = NULL;
	int              k, iters, warm, ret = 1;

	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	if (o->aligned) {
		void *p = NULL, *q = NULL;

		if (posix_memalign(&p, 4096, max) == 0)
			sb = p;
		if (posix_memalign(&q, 4096, max) == 0)
			rb = q;
	} else {
		sb = malloc(max);
		rb = malloc(max);
	}
	if (sb == NULL || rb == NULL)
		goto out;
	pp_fill(sb, max, (uint64_t) rank);
	if (o->rmq != NULL) {
		a.s    = rmq_pair_open(o->rmq, rank, &ctx);
		a.nlib = 2;
		a.zc   = o->zc;
	}
	if (o->fi != NULL) {
		fip_open(&f, o->fi, o->fi_wait, rank, max);
		a.f    = &f;
		a.nlib = 3;
	}
	if (rank == 0) {
		printf("# " PROG ": %s, MPI_Send/MPI_Recv, rank 0 measures, "
		       "rank 1 echoes\n",
		       mpi_version());
		if (o->rmq != NULL)
			printf("# and librmq %s, a PAIR over %s%s%s%s, "
			       "alternated with MPI in %d blocks per size and "
			       "library, the order rotated each block\n",
			       rmq_version(), o->rmq,
			       o->fi != NULL ? ", and a bare libfabric " : "",
			       o->fi != NULL ? o->fi : "",
			       o->fi == NULL ? ""
			       : o->fi_wait ? " ping-pong (fi_pingpong's way, "
			                      "its CQ with a wait fd)"
			                    : " ping-pong (fi_pingpong's way)",
			       o->blocks);
		if (o->rmq != NULL && (o->aligned || o->zc))
			printf("# with%s%s\n",
			       o->aligned ? " page-aligned buffers" : "",
			       o->zc ? (o->aligned ? ", librmq's zero-copy calls"
			                           : " librmq's zero-copy calls")
			             : "");
		if (o->csv)
			printf(PP_CSV_HEADER "\n");
		else
			printf("# %10s %8s %10s %10s %10s %10s  %s\n", "size",
			       "iters", "p50_us", "p99_us", "avg_us", "MB/s",
			       "path");
		fflush(stdout);
	}
	for (k = 0; k < o->nsizes; k++) {
		size  = o->sizes[k];
		iters = o->iters > 0 ? o->iters : default_iters(size);
		warm  = o->warmup >= 0 ? o->warmup : size <= 65536 ? 1000 : 100;
		if (o->rmq != NULL) {
			a.blocks = o->blocks < iters ? o->blocks : iters;
			a.per    = iters / a.blocks;
			a.warm   = warm;
			iters    = a.blocks * a.per;
		}
		if (rank == 0) {
			free(lat);
			lat = NULL;
			pp_stamps_free(&st);
			alt_free(&a);
			if (o->rmq == NULL)
				lat = malloc((size_t) iters * sizeof(*lat));
			if ((o->rmq == NULL && lat == NULL) ||
			    (o->rmq != NULL && alt_alloc(&a) != 0) ||
			    pp_stamps_init(&st, o->rmq != NULL ? a.per : iters) != 0)
				goto out;
		}
		if (o->rmq == NULL) {
			pingpong(rank, size, iters, warm, sb, rb, &st, lat);
			if (rank == 0)
				pp_report(o->csv, size, lat, iters, "mpi");
		} else {
			if (rank == 0 && rmq_stats(a.s, &a.st0) != 0)
				memset(&a.st0, 0, sizeof(a.st0));
			alternate(&a, rank, size, sb, rb, &st);
			if (rank == 0) {
				/* One look at the stats for both reports. */
				struct rmq_stats st1;
				bool have = rmq_stats(a.s, &st1) == 0;

				alternate_report(o, &a, size, have ? &st1 : NULL);
				direct_report(&a, size, have ? &st1 : NULL);
			}
		}
		if (rank == 0)
			fflush(stdout);
	}
	ret = 0;
out:
	if (ret != 0)
		fprintf(stderr, PROG " (rank %d): out of memory\n", rank);
	/* fip_close waits for the other rank: not on the way to MPI_Abort. */
	if (a.f != NULL && ret == 0)
		fip_close(a.f);
	if (a.s != NULL)
		rmq_close(a.s);
	if (ctx != NULL)
		rmq_ctx_destroy(ctx);
	free(sb);
	free(rb);
	free(lat);
	alt_free(&a);
	pp_stamps_free(&st);
	return ret;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"csv", no_argument, NULL, 'c'},
	    {"rmq", required_argument, NULL, 'r'},
	    {"fi", required_argument, NULL, 'f'},
	    {"fi-wait", no_argument, NULL, 'w'},
	    {"page-aligned", no_argument, NULL, 'a'},
	    {"zero-copy", no_argument, NULL, 'z'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.iters = 0, .warmup = -1, .blocks = 20};
	int         c, rank, nranks, ret;

	/* Options before MPI_Init, so --version and --help need no mpirun;
	 * only the first rank (or a lone process) complains. */
	pp_mpi_rank(&rank, &nranks);
	if (rank > 0)
		opterr = 0;
	pp_parse_sizes("all", o.sizes, &o.nsizes);
	while ((c = getopt_long(argc, argv, "S:I:W:B:h", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (pp_parse_sizes(optarg, o.sizes, &o.nsizes) != 0)
				goto bad;
			break;
		case 'I':
			if (pp_parse_int(optarg, 1, &o.iters) != 0)
				goto bad;
			break;
		case 'W':
			if (pp_parse_int(optarg, 0, &o.warmup) != 0)
				goto bad;
			break;
		case 'c':
			o.csv = true;
			break;
		case 'r':
			o.rmq = optarg;
			break;
		case 'f':
			o.fi = optarg;
			break;
		case 'w':
			o.fi_wait = true;
			break;
		case 'a':
			o.aligned = true;
			break;
		case 'z':
			o.zc = true;
			break;
		case 'B':
			if (pp_parse_int(optarg, 1, &o.blocks) != 0)
				goto bad;
			break;
		case 'V':
			printf(PROG " (%s)\n", mpi_version());
			return fflush(stdout) != 0 ? 1 : 0;
		case 'h':
			usage(stdout);
			return fflush(stdout) != 0 ? 1 : 0;
		default:
			goto usage;
		}
	}
	if (optind < argc || (o.fi != NULL && o.rmq == NULL) ||
	    (o.fi_wait && o.fi == NULL) || (o.zc && o.rmq == NULL))
		goto usage;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2) {
		if (rank == 0)
			fprintf(stderr, PROG ": run with exactly 2 ranks "
			                "(mpirun -np 2), not %d\n",
			        nranks);
		MPI_Finalize();
		return 2;
	}
	ret = run(&o, rank);
	if (ret != 0)
		MPI_Abort(MPI_COMM_WORLD, ret);
	MPI_Finalize();
	return ret;

bad:
	if (rank <= 0)
		fprintf(stderr, PROG ": bad -%c %s\n", c, optarg);
	return 2;
usage:
	if (rank <= 0)
		usage(stderr);
	return 2;
}
