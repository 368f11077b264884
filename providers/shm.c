/*
 * shm: libfabric's shared-memory provider (same host).
 *
 * Measured here with libfabric 1.17: inject_size 4096, no CQ wait fd (we
 * spin, then back off), FI_ADDR_STR addresses, RMA through CMA
 * (process_vm_readv) in the provider: one copy, no NIC.
 *
 * Measured here (rmq_pingpong --local, one-way p50, 2 vCPU KVM): eager
 * (copy in, send, copy out) 4.0/5.9/13.1 us at 8/16/64 KiB against
 * rndv_read 3.3/3.7/5.5 and rndv_send 3.5/3.9/5.7; at 1 MiB read 52.7,
 * send 52.0.  So: inject up to 4080 B, rndv_read above 4 KiB.
 * Measured again 24 Nov 2026 (same loop, by size, alternating, two runs
 * each, p50): eager 2.42-2.44/3.12-3.20/3.82-4.00/4.65-4.78/7.25-7.33 us
 * at 8/16/24/32/64 KiB against rndv_read 2.89/3.32-3.34/4.02-4.04/
 * 4.40-4.49/5.99-6.30: eager wins to 16 KiB (the rendezvous' RTS and FIN
 * hops cost more than the extra copy there), ties at 24, loses above.
 * But back to eager up to 4 KiB (the inject size) the same day: a send
 * above it waits in the sender's shm provider until the receiver takes
 * it, and one receiver that stops reading (paused, or killed and not yet
 * noticed) then stops every send of that process to every peer -- a PUSH
 * with one stalled puller of two moved 96 messages of 4200 B or 8 KiB in
 * 3 s, none to the puller that read (push2 probe, check_pipeline's
 * test_stalled_puller).  rndv_read leaves the payload with the sender
 * until the receiver pulls it, so a stalled receiver costs only itself;
 * it costs 0.5 us at 8 KiB.
 *
 * The ring (perf/compare.sh --paths, forced): 1.38 us at 1 KiB and 2.98
 * at 4 KiB (means) against inject 1.70 and eager 3.70 -- but by size the
 * ring needs a domain that orders writes with sends, and asking shm 1.17
 * for that turns off its CMA fast path: rmq_pingpong by size with a ring
 * range then took 14.2 us at 64 KiB and 144-170 at 1 MiB against 5.8 and
 * 54 without (p50, two runs), and inject p50s were no worse than the
 * ring's below 4 KiB (1.15-1.22 vs 1.31-1.35 at 1 KiB).  rmq_tune found
 * a better mix on the ordered domain (inject to 1 KiB, ring to 4 KiB,
 * rndv_send above: 1.63 vs 2.79 us at 2 KiB), but side by side by size
 * (two runs, p50) it lost or tied: 2 KiB 1.62-1.65 vs inject 1.50-1.51,
 * 4 KiB 2.83-2.87 vs eager 2.88-2.89, 8 KiB 3.75-3.84 vs rndv_read
 * 3.57-3.66, 1 MiB 56-85 vs 52-78.  So no ring by size on shm; forced
 * (RMQ_PATH), or from an rmq_tune file, it is there.  RMA keys are not
 * enforced (a peer wrote outside a registered region with a wrong key), so
 * shm peers must be same-user, trusted processes.
 */
#include "rmq.h"
#include "prov.h"

const struct rmq_prov rmq_prov_shm = {
	.name         = "shm",
	.fi_prov      = "shm",
	.flags        = RMQ_PROV_LOCAL_ONLY | RMQ_PROV_RMA_EMULATED |
	                RMQ_PROV_NO_WAIT_FD | RMQ_PROV_UNSAFE_KEYS,
	.inject_max   = 0,        /* fi_info: 4096 */
	.eager_max    = 4096,     /* above, a stalled receiver stalls every
	                           * send of ours (see above) */
	.ring_max     = 0,        /* measured: no gain (rmq_paths(7)) */
	.rma_chunk    = 0,        /* one CMA read is fastest */
	.cq_data_size = 8,
	.rndv_path    = RMQ_PATH_RNDV_READ, /* ties rndv_send, wins <128K */
	/*
	 * Never by default.  The log was measured faster (rmq_fanout: log
	 * beats push from N = 1), but shm 1.17's fi_read takes a spinlock in
	 * the target's shared region: a subscriber SIGKILLed while it holds
	 * the publisher's spun every other subscriber forever (about one
	 * run in three of check_pubsub_log's test_sub_killed, 24 Nov 2026;
	 * the threads in __pthread_spin_lock under fi_read).  Push mode
	 * survived every run.  thresholds.fanout_log turns it on.
	 */
	.fanout_log   = 0,
	/* libfabric 1.17's shm takes at most 256 addresses per address
	 * table: the 257th fi_av_insert fails with EINVAL (measured,
	 * tests/programs/many_peers 32 x 16).  A second endpoint in the
	 * same domain with its own table takes 256 more (measured: four
	 * endpoints of one process, 1,000 peers), so a socket opens one
	 * more endpoint per 256 peers (ep.c's shards), up to
	 * RMQ_SHARDS_MAX. */
	.max_peers    = 256,
	.notes        = "same host only; RMA keys not enforced (trusted peers)",
};
