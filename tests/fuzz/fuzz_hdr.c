/*
 * fuzz_hdr: one fabric message as it lands in a multi-recv slab
 * (lib/wire.c, called from xfer.c's receive and paths/).
 *
 * Input: the whole message, its completion length being the input's size.
 * In an exact-size heap copy it goes through rmq_hdr_decode, and what that
 * accepts must obey the layout of wire.h (lengths per type, no inject flag
 * where none is sent).  Then the descriptors after the header, decoded as
 * the paths decode them:
 *
 *   RTS, GRANT, HELP  rmq_rts_decode (rndv.c, rndv_write.c,
 *               local_big.c): length, address, key, cookie, flags
 *   SEG         rmq_seg_decode (seg.c): the total length
 *   RING        the first 16 bytes as ring.c decodes a ring slot's header
 *               (rmq_hdr_decode with len = RMQ_HDR_SIZE)
 *
 * and the 32-bit immediates of the ring and rndv_write (RMQ_IMM_*) built
 * from the header's fields.  Whatever decodes is encoded again with
 * rmq_hdr_encode / rmq_rts_encode / rmq_seg_encode: the same bytes come
 * out (the formats are canonical) and decode to the same struct.
 */
#include <string.h>

#include "rmq.h"
#include "wire.h"

#include "fuzz.h"

/* What rmq_hdr_decode accepted must be what wire.h says may arrive. */
static void
check_layout(const struct rmq_hdr *h, size_t len)
{
	uint8_t t      = h->type & RMQ_MT_MASK;
	int     inject = (h->type & RMQ_MT_F_INJECT) != 0;

	FUZZ_CHECK(len >= RMQ_HDR_SIZE, "%zu-byte message accepted", len);
	FUZZ_CHECK(h->version == RMQ_WIRE_VERSION, "version %u accepted",
	           h->version);
	switch (t) {
	case RMQ_MT_DATA:
		FUZZ_CHECK(h->len == len - RMQ_HDR_SIZE, "DATA len %u in %zu",
		           h->len, len);
		break;
	case RMQ_MT_RTS:
	case RMQ_MT_GRANT:
	case RMQ_MT_HELP:
		FUZZ_CHECK(len == RMQ_RTS_SIZE && !inject && h->len == 0,
		           "type %u: %zu bytes, len %u, inject %d", t, len,
		           h->len, inject);
		break;
	case RMQ_MT_SEG:
		FUZZ_CHECK(len >= RMQ_SEG_HDR_SIZE &&
		               h->len == len - RMQ_SEG_HDR_SIZE && !inject,
		           "SEG: %zu bytes, len %u, inject %d", len, h->len,
		           inject);
		break;
	case RMQ_MT_BATCH:
		FUZZ_CHECK(h->len == len - RMQ_HDR_SIZE && h->msgid != 0 &&
		               !inject,
		           "BATCH: %zu bytes, len %u, %u messages, inject %d",
		           len, h->len, h->msgid, inject);
		break;
	case RMQ_MT_RING:
		FUZZ_CHECK(!inject, "RING with the inject flag");
		break;
	case RMQ_MT_RBATCH:
		FUZZ_CHECK(!inject && h->msgid != 0,
		           "RBATCH: %u messages, inject %d", h->msgid, inject);
		break;
	case RMQ_MT_FIN:
	case RMQ_MT_CREDIT:
	case RMQ_MT_CTS:
	case RMQ_MT_RCREDIT:
	case RMQ_MT_ABORT:
	case RMQ_MT_HELPED:
		FUZZ_CHECK(len == RMQ_HDR_SIZE, "type %u in %zu bytes", t, len);
		break;
	default:
		FUZZ_CHECK(0, "unknown type %u accepted", t);
	}
}

/* Encode h over a copy of the message, decode that: the same. */
static void
hdr_round_trip(const struct rmq_hdr *h, const uint8_t *msg, size_t len)
{
	uint8_t       *copy = dup_exact(msg, len);
	struct rmq_hdr h2;
	int            rc;

	memset(copy, 0xa5, RMQ_HDR_SIZE);
	rmq_hdr_encode(copy, h);
	FUZZ_CHECK(memcmp(copy, msg, RMQ_HDR_SIZE) == 0,
	           "header re-encoded to other bytes");
	memset(&h2, 0x5a, sizeof h2);
	rc = rmq_hdr_decode(&h2, copy, len);
	FUZZ_CHECK(rc == 0, "re-encoded header refused: %d", rc);
	FUZZ_CHECK(h2.version == h->version && h2.type == h->type &&
	               h2.credits == h->credits && h2.conn == h->conn &&
	               h2.msgid == h->msgid && h2.len == h->len,
	           "header decodes differently after re-encoding");
	free(copy);
}

/* RTS, GRANT and HELP: the 32 bytes after the header. */
static void
rts(const uint8_t *ext)
{
	struct rmq_rts r, r2;
	uint8_t        out[RMQ_RTS_EXT_SIZE];
	uint32_t       flags = rmq_get32(ext + 28);
	int            valid, rc;

	memset(&r, 0, sizeof r);
	rc    = rmq_rts_decode(&r, ext);
	valid = flags == 0 || flags == RMQ_RTS_F_SEND ||
	        flags == RMQ_RTS_F_WRITE || flags == RMQ_RTS_F_CMA ||
	        flags == (RMQ_RTS_F_CMA | RMQ_RTS_F_SHARE);
	FUZZ_CHECK(rc == 0 || rc == -RMQ_EPROTO, "rts_decode returned %d",
	           rc);
	FUZZ_CHECK((rc == 0) == valid, "flags %#x: %d", flags, rc);
	if (rc != 0)
		return;
	memset(out, 0xa5, sizeof out);
	rmq_rts_encode(out, &r);
	FUZZ_CHECK(memcmp(out, ext, sizeof out) == 0,
	           "RTS re-encoded to other bytes");
	memset(&r2, 0, sizeof r2);
	rc = rmq_rts_decode(&r2, out);
	FUZZ_CHECK(rc == 0 && r2.len == r.len && r2.raddr == r.raddr &&
	               r2.rkey == r.rkey && r2.cookie == r.cookie &&
	               r2.flags == r.flags,
	           "RTS decodes differently after re-encoding");
}

static void
seg(const uint8_t *ext)
{
	uint8_t  out[RMQ_SEG_EXT_SIZE];
	uint64_t total = rmq_seg_decode(ext);

	rmq_seg_encode(out, total);
	FUZZ_CHECK(memcmp(out, ext, sizeof out) == 0,
	           "SEG re-encoded to other bytes");
	FUZZ_CHECK(rmq_seg_decode(out) == total, "SEG round trip");
}

/* The remote CQ data of ring writes and rndv_write (wire.h). */
static void
imm(uint32_t d, uint32_t peer, uint32_t slot)
{
	uint32_t r = RMQ_IMM_RING_MAKE(peer, slot);
	uint32_t w = RMQ_IMM_WRITE_MAKE(d);

	FUZZ_CHECK(RMQ_IMM_KIND(r) == RMQ_IMM_RING &&
	               RMQ_IMM_RING_PEER(r) == (peer & 0x3fffu) &&
	               RMQ_IMM_RING_SLOT(r) == (slot & 0xffffu) &&
	               RMQ_IMM_RING_PEER(r) < RMQ_RING_PEERS_MAX &&
	               RMQ_IMM_RING_SLOT(r) < RMQ_RING_SLOTS_MAX,
	           "ring immediate %#x from %u/%u", r, peer, slot);
	FUZZ_CHECK(RMQ_IMM_KIND(w) == RMQ_IMM_WRITE &&
	               RMQ_IMM_WRITE_ID(w) == (d & 0x3fffffffu),
	           "write immediate %#x from %u", w, d);
	if (RMQ_IMM_KIND(d) == RMQ_IMM_RING)
		FUZZ_CHECK(RMQ_IMM_RING_MAKE(RMQ_IMM_RING_PEER(d),
		                             RMQ_IMM_RING_SLOT(d)) == d,
		           "ring immediate %#x", d);
	if (RMQ_IMM_KIND(d) == RMQ_IMM_WRITE)
		FUZZ_CHECK(RMQ_IMM_WRITE_MAKE(RMQ_IMM_WRITE_ID(d)) == d,
		           "write immediate %#x", d);
}

/* A ring slot's header: ring.c decodes 16 bytes whatever follows. */
static void
ring_slot(const uint8_t *msg)
{
	uint8_t       *slot = dup_exact(msg, RMQ_HDR_SIZE);
	struct rmq_hdr h;
	int            rc;

	rc = rmq_hdr_decode(&h, slot, RMQ_HDR_SIZE);
	FUZZ_CHECK(rc == 0 || rc == -RMQ_EPROTO || rc == -RMQ_EVERSION,
	           "ring slot: decode returned %d", rc);
	if (msg[0] == RMQ_WIRE_VERSION && msg[1] == RMQ_MT_RING)
		FUZZ_CHECK(rc == 0, "a ring slot header refused: %d", rc);
	if (rc == 0) {
		check_layout(&h, RMQ_HDR_SIZE);
		hdr_round_trip(&h, slot, RMQ_HDR_SIZE);
	}
	free(slot);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t       *msg = dup_exact(data, size);
	struct rmq_hdr h;
	int            rc;

	memset(&h, 0, sizeof h);
	rc = rmq_hdr_decode(&h, msg, size);
	FUZZ_CHECK(rc == 0 || rc == -RMQ_EPROTO || rc == -RMQ_EVERSION,
	           "hdr_decode returned %d", rc);
	if (size < RMQ_HDR_SIZE)
		FUZZ_CHECK(rc == -RMQ_EPROTO, "%zu bytes: %d", size, rc);
	else if (msg[0] != RMQ_WIRE_VERSION)
		FUZZ_CHECK(rc == -RMQ_EVERSION, "version %u: %d", msg[0], rc);
	if (size >= RMQ_HDR_SIZE)
		ring_slot(msg);
	if (rc == 0) {
		check_layout(&h, size);
		hdr_round_trip(&h, msg, size);
		imm(h.msgid, h.conn, h.len);
		switch (h.type & RMQ_MT_MASK) {
		case RMQ_MT_RTS:
		case RMQ_MT_GRANT:
		case RMQ_MT_HELP:
			rts(msg + RMQ_HDR_SIZE);
			break;
		case RMQ_MT_SEG:
			seg(msg + RMQ_HDR_SIZE);
			break;
		default:
			break;
		}
	}
	free(msg);
	return 0;
}
