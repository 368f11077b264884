/*
 * shm: libfabric's shared-memory provider (same host).
 *
 * Measured here with libfabric 1.17: inject_size 4096, no CQ wait fd (we
 * spin, then back off), FI_ADDR_STR addresses, RMA through CMA
 * (process_vm_readv) in the provider: one copy, no NIC.
 *
 * Eager (copy in, send, copy out) up to 4 KiB, the inject size, then
 * rndv_read.  Eager was faster to 16 KiB (the rendezvous' RTS and FIN
 * hops cost more than the extra copy there), but a send above the inject
 * size waits in the sender's shm provider until the receiver takes it,
 * and one receiver that stops reading (paused, or killed and not yet
 * noticed) then stops every send of that process to every peer
 * (check_pipeline's test_stalled_puller).  rndv_read leaves the payload
 * with the sender until the receiver pulls it, so a stalled receiver
 * costs only itself, for a little latency at 8 KiB.
 *
 * The ring, forced, is faster than inject and eager below 4 KiB, but by
 * size it needs a domain that orders writes with sends, and asking shm
 * 1.17 for that turns off its CMA fast path: the rendezvous sizes then
 * took several times as long, and inject was no worse than the ring
 * below 4 KiB.  rmq_tune's best mix on the ordered domain lost or tied
 * side by side.  So no ring by size on shm; forced (RMQ_PATH), or from
 * an rmq_tune file, it is there.  Measured: docs/INTERNALS.md §17,
 * "shm's thresholds".  RMA keys are not
 * enforced (a peer wrote outside a registered region with a wrong key), so
 * shm peers must be same-user, trusted processes.
 */
#include "rmq.h"
#include "prov.h"

/* What shm's rows for libfabric 1.x and 2.x share. */
#define SHM_FLAGS (RMQ_PROV_LOCAL_ONLY | RMQ_PROV_RMA_EMULATED | \
                   RMQ_PROV_NO_WAIT_FD | RMQ_PROV_UNSAFE_KEYS)
#define SHM_ROW_COMMON \
	.name         = "shm",                                                \
	.fi_prov      = "shm",                                                \
	.inject_max   = 0,        /* fi_info: 4096 */                         \
	.eager_max    = 4096,     /* above, a stalled receiver stalls every   \
	                           * send of ours (see above) */              \
	.ring_max     = 0,        /* measured: no gain (rmq_paths(7)) */      \
	.rma_chunk    = 0,        /* one CMA read is fastest */               \
	.cq_data_size = 8,                                                    \
	.rndv         = "rndv_read", /* ties rndv_send, wins <128K */         \
	/*                                                                    \
	 * Never by default.  The log was measured faster (rmq_fanout: log    \
	 * beats push from N = 1), but shm 1.17's fi_read takes a spinlock in \
	 * the target's shared region: a subscriber SIGKILLed while it holds  \
	 * the publisher's spun every other subscriber forever                \
	 * (check_pubsub_log's test_sub_killed, docs/INTERNALS.md §14; the    \
	 * threads in __pthread_spin_lock under fi_read).  Push mode          \
	 * survived every run.  thresholds.fanout_log turns it on.            \
	 */                                                                   \
	.fanout_log   = 0,                                                    \
	/* libfabric 1.17's shm takes at most 256 addresses per address       \
	 * table: the 257th fi_av_insert fails with EINVAL (measured,         \
	 * tests/programs/many_peers 32 x 16).  A second endpoint in the      \
	 * same domain with its own table takes 256 more (measured: four      \
	 * endpoints of one process, 1,000 peers), so a socket opens one      \
	 * more endpoint per 256 peers (ep.c's shards), up to                 \
	 * RMQ_SHARDS_MAX. */                                                 \
	.max_peers    = 256,                                                  \
	.notes        = "same host only; RMA keys not enforced (trusted peers)",

/*
 * libfabric 2.x's shm (measured with 2.1): multi-receive buffers lose
 * sends above the inject size, which it moves by CMA into the posted
 * buffer (a seg stream of 48 or 64 KiB stopped for good within a few
 * round trips; every size to 1 MiB ran with one message per receive), so
 * receives take one message each.  Data progress is manual there.  The
 * rest as measured on 1.17 until 2.1's own runs say otherwise
 * (docs/INTERNALS.md, "libfabric versions").
 */
static const struct rmq_prov shm_v2 = {
	SHM_ROW_COMMON
	.flags        = SHM_FLAGS | RMQ_PROV_ONE_RECV,
	.measured_on  = "2.1",
};

const struct rmq_prov rmq_prov_shm = {
	SHM_ROW_COMMON
	.flags        = SHM_FLAGS,
	.measured_on  = "1.17",
	.v2           = &shm_v2,
};
