/*
 * Recorded fi_info values: what each provider returns in libfabric 1.17
 * for the hints rmq_caps_hints() builds, for the unit tests of
 * capabilities, the path selector and the path rows.  Every recorded
 * value names its source.  verbs and efa cannot run here (no NIC), so their
 * values come from the 1.17 sources and man pages; shm, tcp;ofi_rxm and
 * sockets were read back from fi_getinfo() on this machine (libfabric
 * 1.17.0) with the same hints.
 *
 * Sources, abbreviated below:
 *   rxm_init.c   ofiwg/libfabric prov/rxm/src/rxm_init.c, rxm_info_to_rxm(),
 *                rxm_alter_info(), rxm_buffer_size = 16384
 *   rxm_attr.c   prov/rxm/src/rxm_attr.c, RXM_RX_CAPS has FI_MULTI_RECV,
 *                rxm_domain_attr.cq_data_size = 8
 *   verbs_info.c prov/verbs/src/verbs_info.c, verbs_domain_attr,
 *                VERBS_MSG_ORDER, max_msg_size = ibv_port_attr.max_msg_sz
 *   efa117       libfabric 1.17.1 prov/efa/src/efa_prov_info.c,
 *                efa_prov_info_alloc_for_rxr(); prov/efa/src/efa_user_info.c,
 *                efa_user_info_alter_rxr(); prov/efa/src/rxr/rxr.h
 *   efa118       prov/efa/src/efa_prov_info.c efa_prov_info_alloc_for_rdm()
 *                and prov/efa/src/rdm/efa_rdm_cq.h (1.18 and later)
 *   fi_info      fi_getinfo(FI_VERSION(1, 17)) with rmq_caps_hints() on this
 *                machine, libfabric 1.17.0 (same as `fi_info -p X -v`)
 *   fi_verbs.7   fi_verbs(7) of libfabric 1.17.0 as installed here
 *                (/usr/share/man/man7/fi_verbs.7.gz): "Modes" (FI_MR_LOCAL,
 *                FI_RX_CQ_DATA for MSG endpoints), "Progress" (AUTO), "Msg
 *                Ordering", "Unsupported features specific to MSG
 *                endpoints" (FI_TAGGED), FI_VERBS_INLINE_SIZE (default 64)
 *   vrb_alter    prov/verbs/src/verbs_info.c vrb_alter_info(): FI_RX_CQ_DATA
 *                goes into info->mode when the hints' mode offers it (else
 *                cq_data_size becomes 0); for FI_EP_MSG inject_size =
 *                MIN(the QP's max_inline_data, FI_VERBS_INLINE_SIZE) unless
 *                the hints ask for an inject_size; vrb_alloc_info(): iWARP
 *                reports cq_data_size 0; VERBS_MSG_CAPS (no FI_TAGGED, no
 *                FI_MULTI_RECV); VERBS_MSG_ORDER (the RAR, RAW and WAW bits
 *                as OFI_ORDER_*_SET, i.e. with their RMA_ and ATOMIC_ twins)
 *   rxm_core     prov/rxm/src/rxm_init.c rxm_info_to_core() (our tx
 *                msg_order goes down to the core as asked) and
 *                rxm_info_to_rxm() (tx msg_order = the core's, unchanged)
 *   fi_efa.7     fi_efa(7) of libfabric 1.17.0 as installed here: "Endpoint
 *                types" (SRD unordered, send-after-send only on RDM)
 *   live-rw      fi_getinfo() here (1.17.0) with today's rmq_caps_hints_level()
 *                at levels 0 and 1, which ask FI_WRITE|FI_REMOTE_WRITE too:
 *                shm, tcp;ofi_rxm and sockets grant both (the GRANTED rows
 *                below were read back before the hints asked for writes)
 */
#ifndef RMQ_FI_RECS_H
#define RMQ_FI_RECS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <rdma/fabric.h>

#include "caps.h"
#include "paths/path.h"
#include "prov.h"

#define KiB ((size_t) 1 << 10)
#define MiB ((size_t) 1 << 20)
#define GiB ((size_t) 1 << 30)

/* The primary caps every provider grants for our hints (FI_MSG expands to
 * FI_SEND|FI_RECV, FI_RMA|FI_READ to the initiator side). */
#define GRANTED                                                              \
	(FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_RECV | FI_SEND |          \
	    FI_REMOTE_READ | FI_MULTI_RECV)

#define VERBS_ORDER                                                          \
	(FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAW |          \
	    FI_ORDER_WAS | FI_ORDER_SAW | FI_ORDER_SAS)
#define EFA_ORDER                                                            \
	(FI_ORDER_SAS | FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW |           \
	    FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)
#define RXM_TCP_ORDER                                                        \
	(VERBS_ORDER | FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW |                  \
	    FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW |    \
	    FI_ORDER_ATOMIC_WAW)
#define ALL_ORDER                                                            \
	(RXM_TCP_ORDER | FI_ORDER_WAR | FI_ORDER_SAR | FI_ORDER_RMA_WAR |     \
	    FI_ORDER_ATOMIC_WAR)

/* What fi_getinfo returned: the fields rmq_caps_from_info() reads. */
struct rec {
	const char            *what;
	const struct rmq_prov *row;
	uint64_t               caps;
	uint64_t               mode;
	int                    mr_mode;
	size_t                 cq_data_size;
	size_t                 mr_key_size;
	enum fi_progress       data_progress;
	size_t                 inject_size;
	uint64_t               msg_order;
	size_t                 max_msg_size;
	const char            *prov_name;
	enum fi_ep_type        ep_type; /* FI_EP_UNSPEC (0): FI_EP_RDM */
	uint32_t               protocol; /* ep_attr->protocol (0: unspec) */
	size_t                 iov_limit;     /* tx_attr (0: not recorded) */
	size_t                 rma_iov_limit; /* tx_attr (0: not recorded) */
};

/* verbs;ofi_rxm: RDM over verbs RC, libfabric 1.17. */
static const struct rec rec_verbs = {
	.what = "verbs;ofi_rxm",
	.row  = &rmq_prov_verbs,
	/* rxm_attr.c RXM_TX_CAPS|RXM_RX_CAPS (FI_TAGGED, FI_MULTI_RECV), cut
	 * to the requested primary caps by ofi_alter_info (same path as
	 * tcp;ofi_rxm, see rec_tcp) */
	.caps = GRANTED,
	/* rxm_init.c: core mode & ~FI_RX_CQ_DATA | base mode (0) */
	.mode = 0,
	/* verbs_info.c: OFI_MR_BASIC_MAP | FI_MR_LOCAL | FI_MR_BASIC; rxm
	 * ORs the core's bits in; fi_rxm(7) "Memory Region"; fi_verbs(7)
	 * "FI_MR_LOCAL"; BASIC itself is dropped by ofi_alter_info */
	.mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
	           FI_MR_PROV_KEY,
	/* verbs_info.c: sizeof_field(struct ibv_send_wr, imm_data) = 4;
	 * rxm_init.c: MIN(core 4, rxm 8) */
	.cq_data_size = 4,
	/* verbs_info.c: sizeof_field(struct ibv_sge, lkey) */
	.mr_key_size = 4,
	/* rxm_init.c rxm_alter_info: MANUAL unless hints ask for AUTO */
	.data_progress = FI_PROGRESS_MANUAL,
	/* rxm_init.c: ofi_mr_local(info) -> inject_size = rxm_buffer_size
	 * (16384; fi_rxm(7) FI_OFI_RXM_BUFFER_SIZE "default: ~16k") */
	.inject_size = 16384,
	/* verbs_info.c VERBS_MSG_ORDER, passed up by rxm_info_to_rxm */
	.msg_order = VERBS_ORDER,
	/* verbs_info.c: ibv_port_attr.max_msg_sz, 2^30 on RC (mlx5) */
	.max_msg_size = 1 * GiB,
	.prov_name    = "verbs;ofi_rxm",
};

/* efa RDM endpoint as libfabric 1.17 reports it. */
static const struct rec rec_efa_117 = {
	.what = "efa 1.17",
	.row  = &rmq_prov_efa,
	/* efa117: rxr_added_tx/rx_caps (FI_TAGGED, OFI_TX_RMA_CAPS,
	 * OFI_RX_RMA_CAPS, FI_MULTI_RECV); FI_SOURCE from EFA_RDM_RX_CAPS */
	.caps = GRANTED | FI_SOURCE,
	.mode = 0,
	/* efa117: OFI_MR_BASIC_MAP from efa_domain_attr, FI_MR_LOCAL cleared
	 * for RxR, then set again by efa_user_info_alter_rxr() because the
	 * hints offer it; fi_efa(7) "Memory registration modes" */
	.mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
	           FI_MR_PROV_KEY,
	/* efa117: cq_data_size = RXR_CQ_DATA_SIZE, rxr.h: (8) */
	.cq_data_size = 8,
	/* efa117: sizeof_field(struct ibv_sge, lkey) */
	.mr_key_size = 4,
	/* efa117 efa_user_info_alter_rxr: hints->caps & FI_RMA -> MANUAL */
	.data_progress = FI_PROGRESS_MANUAL,
	/* efa117: MIN(MTU 8928, shm_max_medium_size 4096) minus
	 * rxr_pkt_max_hdr_size() = 168 (24-byte RTW/RTR/RTA base + 40 raw
	 * addr + 8 cq data + 4 x 24 rma_iov, rxr/rdm_proto_v4.h) */
	.inject_size = 4096 - 168,
	/* efa117: tx_attr->msg_order */
	.msg_order = EFA_ORDER,
	/* efa117: "RxR support message segmentation": UINT64_MAX */
	.max_msg_size = SIZE_MAX,
	.prov_name    = "efa",
};

/* efa RDM endpoint from libfabric 1.18 on (rxr renamed efa_rdm). */
static const struct rec rec_efa_118 = {
	.what          = "efa >= 1.18",
	.row           = &rmq_prov_efa,
	.caps          = GRANTED | FI_SOURCE,
	.mode          = 0,
	.mr_mode       = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
	                 FI_MR_PROV_KEY,
	/* efa118: EFA_RDM_CQ_DATA_SIZE (4) in rdm/efa_rdm_cq.h: 4, not 8 */
	.cq_data_size  = 4,
	.mr_key_size   = 4,
	.data_progress = FI_PROGRESS_MANUAL,
	/* efa118: MIN(max_msg_size - max hdr, SHM_MAX_INJECT_SIZE 4096) */
	.inject_size   = 4096,
	.msg_order     = EFA_ORDER,
	.max_msg_size  = SIZE_MAX,
	.prov_name     = "efa",
};

/* shm, libfabric 1.17.0, read back here (fi_info). */
static const struct rec rec_shm = {
	.what          = "shm",
	.row           = &rmq_prov_shm,
	.caps          = GRANTED | FI_RMA_EVENT | FI_SOURCE, /* fi_info */
	.mode          = 0,                                  /* fi_info */
	.mr_mode       = FI_MR_VIRT_ADDR,                    /* fi_info */
	.cq_data_size  = 8,                                  /* fi_info */
	.mr_key_size   = 8,                                  /* fi_info */
	.data_progress = FI_PROGRESS_MANUAL,                 /* fi_info */
	.inject_size   = 4096,                               /* fi_info */
	.msg_order     = FI_ORDER_SAS,                       /* fi_info */
	.max_msg_size  = SIZE_MAX,                           /* fi_info */
	.prov_name     = "shm",
	.iov_limit     = 4,                                  /* fi_info */
	.rma_iov_limit = 4,                                  /* fi_info */
};

/* tcp;ofi_rxm, libfabric 1.17.0, read back here (fi_info). */
static const struct rec rec_tcp = {
	.what          = "tcp;ofi_rxm",
	.row           = &rmq_prov_tcp,
	.caps          = GRANTED,            /* fi_info */
	.mode          = 0,                  /* fi_info */
	.mr_mode       = 0,                  /* fi_info */
	.cq_data_size  = 8,                  /* fi_info */
	.mr_key_size   = 8,                  /* fi_info */
	.data_progress = FI_PROGRESS_MANUAL, /* fi_info */
	/* fi_info: 64 = tcp's 128 - sizeof(struct rxm_pkt) (rxm_init.c) */
	.inject_size   = 64,
	.msg_order     = RXM_TCP_ORDER,      /* fi_info */
	.max_msg_size  = SIZE_MAX,           /* fi_info */
	.prov_name     = "tcp;ofi_rxm",
	.iov_limit     = 4,                  /* fi_info */
	.rma_iov_limit = 4,                  /* fi_info */
};

/* sockets, libfabric 1.17.0, read back here (fi_info). */
static const struct rec rec_sockets = {
	.what          = "sockets",
	.row           = &rmq_prov_sockets,
	.caps          = GRANTED | FI_TRIGGER | FI_FENCE | FI_RMA_PMEM |
	                 FI_SHARED_AV | FI_RMA_EVENT | FI_SOURCE, /* fi_info */
	.mode          = 0,                                       /* fi_info */
	.mr_mode       = 0,                                       /* fi_info */
	.cq_data_size  = 8,                                       /* fi_info */
	.mr_key_size   = 8,                                       /* fi_info */
	.data_progress = FI_PROGRESS_AUTO,                        /* fi_info */
	.inject_size   = 255,                                     /* fi_info */
	.msg_order     = ALL_ORDER,                               /* fi_info */
	/* fi_info: 18446744073709547519 */
	.max_msg_size  = SIZE_MAX - 4096,
	.prov_name     = "sockets",
	/* fi_getinfo with FI_RMA|FI_WRITE asked (fi_info without hints
	 * shows rma_iov_limit 0) */
	.iov_limit     = 8,
	.rma_iov_limit = 8,
};

/* What today's hints get granted: writes too (live-rw). */
#define GRANTED_RW (GRANTED | FI_WRITE | FI_REMOTE_WRITE)

/* verbs RC ordering as VERBS_MSG_ORDER spells it (vrb_alter): the bits
 * fi_verbs.7 "Msg Ordering" lists, RAR/RAW/WAW with their RMA_ and ATOMIC_
 * twins.  The same set tcp;ofi_rxm reports here (RXM_TCP_ORDER). */
#define VERBS_RC_ORDER                                                       \
	(VERBS_ORDER | FI_ORDER_RMA_RAR | FI_ORDER_RMA_RAW |                  \
	    FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW |    \
	    FI_ORDER_ATOMIC_WAW)

/*
 * verbs;ofi_rxm (RDM over verbs RC) as today's hints get it: rec_verbs
 * with FI_WRITE|FI_REMOTE_WRITE granted and the ordering rxm passes up.
 */
static const struct rec rec_verbs_rxm = {
	.what = "verbs;ofi_rxm (writes)",
	.row  = &rmq_prov_verbs,
	/* rxm_attr.c RXM_TX_CAPS|RXM_RX_CAPS cut to what we ask: the same
	 * primary caps tcp;ofi_rxm grants here for these hints (live-rw) */
	.caps = GRANTED_RW,
	.mode = 0, /* as rec_verbs: rxm_init.c drops the core's FI_RX_CQ_DATA */
	.mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
	           FI_MR_PROV_KEY, /* as rec_verbs */
	.cq_data_size  = 4,         /* as rec_verbs: MIN(core 4, rxm 8) */
	.mr_key_size   = 4,         /* as rec_verbs */
	.data_progress = FI_PROGRESS_MANUAL, /* as rec_verbs */
	.inject_size   = 16384,     /* as rec_verbs */
	/* rxm_core: our level-0 order (SAS|WAW|WAS|SAW) goes down to verbs,
	 * which has all of it, and verbs' own tx msg_order comes back up */
	.msg_order    = VERBS_RC_ORDER,
	.max_msg_size = 1 * GiB, /* as rec_verbs */
	.prov_name    = "verbs;ofi_rxm",
};

/*
 * verbs FI_EP_MSG (RC, no rxm), libfabric 1.17, for hints that ask for
 * no FI_TAGGED and no FI_MULTI_RECV (with them verbs answers nothing:
 * vrb_check_hints() refuses caps it lacks).  librmq does not open MSG
 * endpoints yet; this is what it would get.
 */
static const struct rec rec_verbs_msg = {
	.what = "verbs MSG (RC)",
	.row  = &rmq_prov_verbs,
	/* vrb_alter VERBS_MSG_CAPS cut to the primary caps asked for;
	 * fi_verbs.7: FI_TAGGED unsupported on MSG endpoints; FI_MULTI_RECV
	 * is not in VERBS_MSG_CAPS */
	.caps = FI_MSG | FI_SEND | FI_RECV | FI_RMA | FI_READ | FI_WRITE |
	        FI_REMOTE_READ | FI_REMOTE_WRITE,
	/* vrb_alter: our hints' mode offers FI_RX_CQ_DATA, so verbs keeps it
	 * (VERBS_RX_MODE) and reports it in info->mode; fi_verbs.7 "Modes" */
	.mode = FI_RX_CQ_DATA,
	/* vrb_alter: verbs_domain_attr OFI_MR_BASIC_MAP | FI_MR_LOCAL, BASIC
	 * dropped by ofi_alter_info for API >= 1.5; fi_verbs.7 "Modes" */
	.mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
	           FI_MR_PROV_KEY,
	/* vrb_alter: sizeof ibv_send_wr.imm_data, kept because FI_RX_CQ_DATA
	 * is offered (0 on iWARP, see test_path_cq_data_zero) */
	.cq_data_size = 4,
	.mr_key_size  = 4, /* verbs_domain_attr: sizeof ibv_sge.lkey */
	/* verbs_domain_attr; fi_verbs.7 "Progress": FI_PROGRESS_AUTO */
	.data_progress = FI_PROGRESS_AUTO,
	/* vrb_alter: the smaller of the QP's max_inline_data and
	 * FI_VERBS_INLINE_SIZE (default 64, fi_verbs.7): 64 unless the
	 * device inlines less */
	.inject_size = 64,
	.msg_order   = VERBS_RC_ORDER, /* vrb_alter VERBS_MSG_ORDER */
	/* as rec_verbs: ibv_port_attr.max_msg_sz, 2^30 on RC (mlx5) */
	.max_msg_size = 1 * GiB,
	.prov_name    = "verbs",
	.ep_type      = FI_EP_MSG,
};

/* Every accepted record, for the checks that run over all of them. */
static const struct rec *const all_recs[] = {
	&rec_verbs, &rec_verbs_rxm, &rec_efa_117, &rec_efa_118,
	&rec_shm, &rec_tcp, &rec_sockets,
};

#define NALL (sizeof all_recs / sizeof all_recs[0])

/* r as today's hints get it: FI_WRITE|FI_REMOTE_WRITE granted too. */
static inline struct rec
with_write(const struct rec *r)
{
	struct rec w = *r;

	w.caps |= FI_WRITE | FI_REMOTE_WRITE;
	return w;
}

/* A struct fi_info holding r's values; free with fi_freeinfo(). */
static inline struct fi_info *
info_make(const struct rec *r)
{
	struct fi_info *info = fi_allocinfo();

	ck_assert_ptr_nonnull(info);
	info->caps                        = r->caps;
	info->mode                        = r->mode;
	info->ep_attr->type               = r->ep_type != FI_EP_UNSPEC
	                                        ? r->ep_type
	                                        : FI_EP_RDM;
	info->ep_attr->max_msg_size       = r->max_msg_size;
	info->ep_attr->protocol           = r->protocol;
	info->tx_attr->inject_size        = r->inject_size;
	info->tx_attr->msg_order          = r->msg_order;
	info->tx_attr->iov_limit          = r->iov_limit;
	info->tx_attr->rma_iov_limit      = r->rma_iov_limit;
	info->rx_attr->msg_order          = r->msg_order;
	info->domain_attr->mr_mode        = r->mr_mode;
	info->domain_attr->cq_data_size   = r->cq_data_size;
	info->domain_attr->mr_key_size    = r->mr_key_size;
	info->domain_attr->data_progress  = r->data_progress;
	info->fabric_attr->prov_name      = strdup(r->prov_name);
	ck_assert_ptr_nonnull(info->fabric_attr->prov_name);
	return info;
}

/* rmq_caps_from_info() over r; returns its result. */
static inline int
caps_of(struct rmq_caps *c, const struct rec *r, const struct rmq_config *cfg)
{
	struct fi_info *info = info_make(r);
	int             rc;

	memset(c, 0xa5, sizeof(*c));
	rc = rmq_caps_from_info(c, info, r->row, cfg, rmq_paths);
	fi_freeinfo(info);
	return rc;
}

#endif /* RMQ_FI_RECS_H */
