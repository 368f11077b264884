/*
 * fi_floor: the floor under librmq's small-message latency -- a bare
 * libfabric ping-pong between two forked processes (CPUs 0 and 1), in two
 * ways, alternating in one run:
 *
 *   plain  one fi_recv per message straight into the receive buffer, as
 *          fi_pingpong does;
 *   slab   what librmq asks of the provider: its capabilities (RMA,
 *          tagged, multi-recv), a 16-byte header before the payload, one
 *          FI_MULTI_RECV slab of 1 MiB, the payload copied out of it.
 *
 * Both send with fi_inject.  What librmq adds above "slab" is its own code.
 *
 * Usage: fi_floor [-p PROVIDER] [-S SIZE] [-I ITERS] [-r ROUNDS]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "bench.h"
#include "fi_api.h"

#define HDR  16
#define SLAB (1u << 20)

struct side {
	struct fi_info    *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_ep     *ep;
	struct fid_av     *av;
	struct fid_cq     *cq;
	fi_addr_t          peer;
	bool               slab;
	size_t             size;
	struct fi_context2 rctx;
	uint8_t           *rbuf, *sbuf, *ubuf;
};

static void
die(const char *what, int rc)
{
	fprintf(stderr, "fi_floor: %s: %s\n", what, fi_strerror(rc < 0 ? -rc : rc));
	exit(1);
}

#define CK(call)                                                         \
	do {                                                             \
		int rc_ = (int) (call);                                  \
		if (rc_ != 0)                                            \
			die(#call, rc_);                                 \
	} while (0)

static void
open_side(struct side *x, const char *prov)
{
	struct fi_info   *h = fi_allocinfo();
	struct fi_av_attr aa = {.type = FI_AV_TABLE};
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_DATA};

	h->caps = FI_MSG;
	if (x->slab) {
		h->caps |= FI_MULTI_RECV | FI_TAGGED | FI_RMA | FI_READ |
		           FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
		h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
		                          FI_MR_ALLOCATED | FI_MR_PROV_KEY |
		                          FI_MR_ENDPOINT;
	}
	h->mode                   = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type          = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup(prov);
	CK(fi_getinfo(rmq_fi_api(), NULL, NULL, 0, h, &x->info));
	fi_freeinfo(h);
	CK(fi_fabric(x->info->fabric_attr, &x->fab, NULL));
	CK(fi_domain(x->fab, x->info, &x->dom, NULL));
	CK(fi_av_open(x->dom, &aa, &x->av, NULL));
	CK(fi_cq_open(x->dom, &ca, &x->cq, NULL));
	CK(fi_endpoint(x->dom, x->info, &x->ep, NULL));
	CK(fi_ep_bind(x->ep, &x->av->fid, 0));
	CK(fi_ep_bind(x->ep, &x->cq->fid, FI_TRANSMIT | FI_RECV));
	CK(fi_enable(x->ep));
	if (x->slab) {
		size_t mm = 8192 + HDR;

		CK(fi_setopt(&x->ep->fid, FI_OPT_ENDPOINT,
		             FI_OPT_MIN_MULTI_RECV, &mm, sizeof(mm)));
	}
	x->rbuf = calloc(1, SLAB);
	x->sbuf = calloc(1, x->size + HDR);
	x->ubuf = calloc(1, x->size + 1);
	if (x->rbuf == NULL || x->sbuf == NULL || x->ubuf == NULL)
		die("calloc", FI_ENOMEM);
}

static void
post(struct side *x)
{
	struct iovec  iov = {.iov_base = x->rbuf, .iov_len = SLAB};
	struct fi_msg m   = {.msg_iov   = &iov,
	                     .iov_count = 1,
	                     .addr      = FI_ADDR_UNSPEC,
	                     .context   = &x->rctx};

	if (x->slab)
		CK(fi_recvmsg(x->ep, &m, FI_MULTI_RECV));
	else
		CK(fi_recv(x->ep, x->rbuf, x->size + HDR, NULL, FI_ADDR_UNSPEC,
		           &x->rctx));
}

static void
recv_one(struct side *x)
{
	struct fi_cq_data_entry e;
	ssize_t                 n;

	for (;;) {
		n = fi_cq_read(x->cq, &e, 1);
		if (n == -FI_EAGAIN)
			continue;
		if (n != 1)
			die("fi_cq_read", (int) n);
		if (e.flags & FI_RECV) {
			if (x->slab)
				memcpy(x->ubuf, (uint8_t *) e.buf + HDR, x->size);
			if (!x->slab || (e.flags & FI_MULTI_RECV))
				post(x);
			return;
		}
		if (e.flags & FI_MULTI_RECV)
			post(x);
	}
}

static void
send_one(struct side *x)
{
	struct fi_cq_data_entry e;
	ssize_t                 rc;

	if (x->slab)
		memcpy(x->sbuf + HDR, x->ubuf, x->size); /* copy in */
	while ((rc = fi_inject(x->ep, x->sbuf, x->size + HDR, x->peer)) ==
	       -FI_EAGAIN)
		(void) fi_cq_read(x->cq, &e, 1);
	if (rc != 0)
		die("fi_inject", (int) rc);
}

/* One round: mean one-way us of iters round trips (after iters / 10). */
static double
round_trip(const char *prov, bool slab, size_t size, int iters)
{
	struct side x = {.slab = slab, .size = size};
	char        name[256], other[256];
	size_t      len = sizeof(name);
	int         a[2], b[2], i, warm = iters / 10, status;
	double      t0 = 0, t;
	pid_t       pid;

	if (pipe(a) != 0 || pipe(b) != 0)
		die("pipe", FI_EIO);
	pid = fork();
	if (pid < 0)
		die("fork", FI_EIO);
	pp_pin(pid == 0 ? 1 : 0);
	open_side(&x, prov);
	post(&x);
	memset(name, 0, sizeof(name));
	CK(fi_getname(&x.ep->fid, name, &len));
	if (write(pid == 0 ? a[1] : b[1], name, sizeof(name)) !=
	        (ssize_t) sizeof(name) ||
	    read(pid == 0 ? b[0] : a[0], other, sizeof(other)) !=
	        (ssize_t) sizeof(other))
		die("pipe", FI_EIO);
	if (fi_av_insert(x.av, other, 1, &x.peer, 0, NULL) != 1)
		die("fi_av_insert", FI_EINVAL);
	if (pid == 0) {
		close(a[1]); /* its end of file says we are done */
		for (i = 0; i < warm + iters; i++) {
			recv_one(&x);
			send_one(&x);
		}
		/* Our last inject must leave before the endpoint goes. */
		(void) !read(a[0], name, 1);
		_exit(0);
	}
	for (i = 0; i < warm + iters; i++) {
		if (i == warm)
			t0 = pp_now_us();
		send_one(&x);
		recv_one(&x);
	}
	t = pp_now_us() - t0;
	close(a[1]);
	waitpid(pid, &status, 0);
	close(a[0]);
	close(b[0]);
	close(b[1]);
	fi_close(&x.ep->fid);
	fi_close(&x.av->fid);
	fi_close(&x.cq->fid);
	fi_close(&x.dom->fid);
	fi_close(&x.fab->fid);
	fi_freeinfo(x.info);
	free(x.rbuf);
	free(x.sbuf);
	free(x.ubuf);
	return t / iters / 2;
}

int
main(int argc, char **argv)
{
	const char *prov  = "shm";
	size_t      size  = 64;
	int         iters = 300000, rounds = 3, c, r;

	while ((c = getopt(argc, argv, "p:S:I:r:h")) != -1) {
		switch (c) {
		case 'p': prov = optarg; break;
		case 'S':
			if (pp_parse_size(optarg, &size) != 0 || size > 8192) {
				fprintf(stderr, "fi_floor: -S: 0 to 8192\n");
				return 2;
			}
			break;
		case 'I': iters = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: fi_floor [-p PROVIDER] [-S SIZE] "
			        "[-I ITERS] [-r ROUNDS]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (iters < 10 || rounds < 1) {
		fprintf(stderr, "fi_floor: -I >= 10, -r >= 1\n");
		return 2;
	}
	printf("# fi_floor: %s, %zu B, %d round trips, mean one-way us\n", prov,
	       size, iters);
	for (r = 0; r < rounds; r++)
	{
		double plain = round_trip(prov, false, size, iters);
		double slab  = round_trip(prov, true, size, iters);

		printf("round %d: plain %.3f  slab %.3f\n", r + 1, plain, slab);
		fflush(stdout);
	}
	return 0;
}
