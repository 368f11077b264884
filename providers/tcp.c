/*
 * tcp: the tcp provider under the ofi_rxm utility (RDM over MSG).
 *
 * ofi_rxm passes every call straight to the tcp provider's own RDM
 * endpoint (FI_OFI_RXM_ENABLE_PASSTHRU=1 below; it does so only when
 * FI_MULTI_RECV is not asked for, so RMQ_PROV_ONE_RECV: receives of one
 * message each, lib/ep.c): lower latency than through rxm's protocol,
 * and less memory per socket.  The inject size is then 128.
 *
 * With rxm's protocol: inject_size 64.  Either way: a CQ wait fd,
 * FI_SOCKADDR_IN addresses, RMA emulated over the TCP stream: a read
 * completes only while the target progresses, and a bad RMA reports
 * success at the initiator and kills the connection.  The first send to a
 * new peer can return -FI_EAGAIN until both sides have progressed the
 * connection.  tcp;ofi_rxm orders writes with sends whatever we ask, so
 * mixing the ring with the other paths costs nothing here.
 *
 * The thresholds: eager up to 4 KiB (a tie with the ring there and ahead
 * below it, on a network MTU; on loopback's 64 KiB MTU eager won further,
 * but a real network's MTU is the one that counts), the ring above it to
 * a quarter of the ring, then rndv_read (ahead of rndv_write and
 * rndv_send for large messages).  Receives stay 8 KiB + 16 (lib/ep.c).
 * An eager range to 64 KiB would need receives of 64 KiB each: not taken.
 * Measured: docs/INTERNALS.md §17, "tcp's thresholds".
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
 * default, a large RSS for every tcp socket.  128 buffers of 8256 bytes
 * (our largest two-sided message, a header and 8 KiB, fits) take a
 * fraction of it, with rmq_bw and rmq_pingpong as fast within the
 * run-to-run spread.  Measured: docs/INTERNALS.md §17, "tcp's rxm
 * buffers".
 */
static const char *const tcp_env[] = {"FI_OFI_RXM_MSG_RX_SIZE", "128",
                                      "FI_OFI_RXM_BUFFER_SIZE", "8256",
                                      "FI_OFI_RXM_ENABLE_PASSTHRU", "1",
                                      NULL};

/* What tcp's rows for libfabric 1.x and 2.x share. */
#define TCP_ROW_COMMON \
	.name         = "tcp",                                                  \
	.flags        = RMQ_PROV_RMA_EMULATED | RMQ_PROV_TARGET_PROG |          \
	                RMQ_PROV_NO_WILDCARD | RMQ_PROV_ONE_RECV |              \
	                RMQ_PROV_ADDR_SOCKADDR |                                \
	                RMQ_PROV_IFACE_DOMAIN |                                 \
	                /* check_paths' test_in_place_stopped_peer: a 64 KiB    \
	                 * ring write to a SIGSTOPped peer completes (the       \
	                 * kernel's socket buffers) */                          \
	                RMQ_PROV_TX_LOCAL_DONE,                                 \
	.inject_max   = 0,        /* fi_info: 128 passed through, 64            \
	                           * with rxm's own protocol */                 \
	.eager_max    = 4096,     /* measured (above) */                        \
	.ring_max     = 65536,    /* measured; cut to a quarter of the ring */  \
	.rma_chunk    = 0,                                                      \
	.cq_data_size = 8,                                                      \
	.rndv         = "rndv_read",                                            \
	.fanout_log   = 2, /* the log from 2 subscribers (rmq_fanout;           \
	                           * INTERNALS §17); 1:1 keeps push latency */  \
	.notes        = "RMA emulated: needs target progress",                  \
	.iface_key    = "tcp.interface",                                        \
	.iface_help   = "tcp: the network interface (libfabric's domain, e.g. " \
	                "eth0) fabric traffic uses; empty = the one the "       \
	                "address routes by",

/*
 * libfabric 2.x: the tcp provider's own RDM endpoint (FI_PROTO_XNET), no
 * ofi_rxm above it, so none of rxm's variables.  One message per receive,
 * as rxm passed through to on 1.x.  The thresholds are 1.x's: every path
 * forced on 2.1 kept them (eager to 8 KiB, the ring to 64 KiB, the
 * rendezvous paths several times slower below that; docs/INTERNALS.md
 * §14, "libfabric versions").
 */
static const struct rmq_prov tcp_v2 = {
	TCP_ROW_COMMON
	.fi_prov      = "tcp",
	.measured_on  = "2.1",
};

const struct rmq_prov rmq_prov_tcp = {
	TCP_ROW_COMMON
	.fi_prov      = "tcp;ofi_rxm",
	.env_defaults = tcp_env,
	.measured_on  = "1.17",
	.v2           = &tcp_v2,
};
