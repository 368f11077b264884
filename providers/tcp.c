/*
 * tcp: the tcp provider under the ofi_rxm utility (RDM over MSG).
 *
 * Since 27 Nov 2026 ofi_rxm passes every call straight to the tcp
 * provider's own RDM endpoint (FI_OFI_RXM_ENABLE_PASSTHRU=1 below; it
 * does so only when FI_MULTI_RECV is not asked for, so RMQ_PROV_ONE_RECV:
 * receives of one message each, lib/ep.c).  fi_pingpong -e rdm on
 * loopback, 64 B: 14.4-15.3 us one-way with rxm's protocol, 9.9-10.4
 * through it, -e msg 9.35-9.64; librmq 12.6-13.2 -> 11.9-12.1 (three
 * alternating runs), a client process of 8 sockets 93 -> 25 MB.  The
 * inject size is then 128.
 *
 * Measured before, with rxm's protocol: inject_size 64, a CQ wait fd,
 * FI_SOCKADDR_IN addresses, RMA emulated over the TCP stream: a read
 * completes only while the target progresses, and a bad RMA reports
 * success at the initiator and kills the connection.  The first send to a
 * new peer can return -FI_EAGAIN until both sides have progressed the
 * connection.
 *
 * Measured here (one-way p50): eager 7.3/22.1/31.8 us at 8/16/64 KiB,
 * rndv_read 18.3/19.8/27.0, rndv_send 16.3/17.7/40.6; at 1 MiB read 127,
 * send 135 (fi_pingpong: 158-166).
 *
 * Then with the ring, under rxm's own protocol (perf/compare.sh --paths,
 * rmq_pingpong by size, two runs, p50 us): eager / ring 4.9/4.5 at 64 B,
 * 5.5/4.8 at 1 KiB, 6.6/5.6 at 4 KiB, 7.8/6.5 at 8 KiB; rndv_read / ring
 * 22.5/8.6 at 16 KiB, 22.3/14.2 at 32 KiB, 30.1/20.4 at 64 KiB; at 128
 * KiB and above rndv_read (38.3 vs rndv_write 52, rndv_send 64 at 256 KiB
 * means).  tcp;ofi_rxm orders writes with sends whatever we ask, so mixing
 * the ring with the other paths costs nothing here.  So until 27 Nov:
 * inject, the ring to a quarter of the ring (65520 B), rndv_read above.
 *
 * Passed through to the tcp provider (27 Nov 2026), mean one-way as a
 * ratio to fi_pingpong -e rdm's in the same run, the ring's table
 * (RMQ_EAGER_MAX=1) against an eager range:
 * - between two network namespaces on a veth pair (MTU 1500,
 *   perf/netns_latency.sh -r 5, alternating, two runs each): ring / eager
 *   1.25-1.33 / 1.10-1.11 at 1 KiB, 1.22-1.29 / 1.12-1.28 at 4 KiB,
 *   1.10-1.12 / 1.65-1.70 at 8 KiB, 1.32-1.51 / 1.47-1.87 at 16 KiB,
 *   1.62-1.80 / 2.07-2.58 at 32 KiB;
 * - on loopback (MTU 64 KiB, perf/compare.sh -p tcp --rmq-env
 *   RMQ_LOCAL=0) eager won from 8 KiB: ring / eager 1.18-2.10 / 1.02-1.16
 *   at 8 KiB, 1.81-1.89 / 1.27-1.78 at 32 KiB.
 * A real network's MTU is the namespaces', so: eager to 4 KiB (a tie
 * there, ahead at 1 KiB), the ring above to a quarter of the ring, then
 * rndv_read.  Receives stay 8 KiB + 16 (lib/ep.c).  At 64 KiB an eager
 * range to 64 KiB measured 0.82-0.88x between the namespaces against
 * rndv_read's 1.38 (one run; receives of 64 KiB each): not taken.
 * Where rxm keeps its own protocol, it carries sends above its buffer
 * size (8256 B, below) by a rendezvous of its own, which completes after
 * the sends behind it (check_pipeline_rxm got messages out of order with
 * a 64 KiB eager range): there lib/caps.c keeps the table measured with
 * that protocol (inject, ring, rndv_read) and never lets eager go above
 * 8 KiB.
 */
#include "rmq.h"
#include "prov.h"

/*
 * (With rxm's own protocol, where libfabric was initialised before we set
 * these:) rxm posts 4096 receive buffers of 16 KiB per endpoint by
 * default: 70 MB of RSS for every tcp socket, so 64 sockets in one
 * process took 4.5 GB.  128 buffers: 20 MB, and rmq_bw's 64 B, 64 KiB
 * and 1 MiB streams as fast within the run-to-run spread (measured 24 Nov
 * 2026, this host).
 * Buffers of 8256 bytes (our largest two-sided message, a header and
 * 8 KiB, fits): 10 MB per socket (4 bound sockets: 74 -> 41 MB of
 * anonymous RSS); rmq_bw at 64 B to 1 MiB and rmq_pingpong at 64 B to
 * 64 KiB, three alternating runs each way, within the run-to-run spread
 * (25 Nov 2026, this host; e.g. 1 MiB 6.69/6.67/3.58 GB/s before,
 * 6.35/4.64/3.80 after; 64 B one-way 5.41/5.52/7.02 us, 5.60/6.81/6.80).
 */
static const char *const tcp_env[] = {"FI_OFI_RXM_MSG_RX_SIZE", "128",
                                      "FI_OFI_RXM_BUFFER_SIZE", "8256",
                                      "FI_OFI_RXM_ENABLE_PASSTHRU", "1",
                                      NULL};

const struct rmq_prov rmq_prov_tcp = {
	.name         = "tcp",
	.fi_prov      = "tcp;ofi_rxm",
	.flags        = RMQ_PROV_RMA_EMULATED | RMQ_PROV_TARGET_PROG |
	                RMQ_PROV_NO_WILDCARD | RMQ_PROV_ONE_RECV |
	                RMQ_PROV_ADDR_SOCKADDR |
	                RMQ_PROV_IFACE_DOMAIN |
	                /* check_paths' test_in_place_stopped_peer: a 64 KiB
	                 * ring write to a SIGSTOPped peer completes (the
	                 * kernel's socket buffers) */
	                RMQ_PROV_TX_LOCAL_DONE,
	.inject_max   = 0,        /* fi_info: 128 passed through, 64
	                           * with rxm's own protocol */
	.eager_max    = 4096,     /* measured 27 Nov (above) */
	.ring_max     = 65536,    /* measured; cut to a quarter of the ring */
	.rma_chunk    = 0,
	.cq_data_size = 8,
	.rndv_path    = RMQ_PATH_RNDV_READ,
	.fanout_log   = 2, /* measured (rmq_fanout): log 9x push at N = 1,
	                           * as fast at N = 8; 1:1 keeps push latency */
	.notes        = "RMA emulated: needs target progress",
	.iface_key    = "tcp.interface",
	.iface_help   = "tcp: the network interface (libfabric's domain, e.g. "
	                "eth0) fabric traffic uses; empty = the one the "
	                "address routes by",
	.env_defaults = tcp_env,
};
