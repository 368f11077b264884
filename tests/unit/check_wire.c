/*
 * Unit tests for lib/wire.c: the 16-byte fabric header, the RTS extension
 * and the control channel frames (HELLO, REJECT, BYE, BYE_ACK).
 *
 * Byte layouts are compared with literal arrays: the wire format is the
 * interface between two librmq builds, and must not depend on the host.
 * The decoders face input from the network, so every malformed case must
 * come back as a negative code; buffers are sized exactly (heap copies)
 * so that valgrind reports any read past the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "checkmain.h"

#include <check.h>

#include "rmq.h"
#include "util.h"
#include "wire.h"

#define FRAME_MAX (RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX)

/* A heap copy of exactly len bytes (at least one byte is allocated). */
static uint8_t *
dup_exact(const uint8_t *src, size_t len)
{
	uint8_t *p = malloc(len > 0 ? len : 1);

	ck_assert_ptr_nonnull(p);
	if (len > 0)
		memcpy(p, src, len);
	return p;
}

/* Decode len bytes through an exact-size heap copy. */
static int
hdr_decode_exact(struct rmq_hdr *h, const uint8_t *b, size_t len)
{
	uint8_t *p = dup_exact(b, len);
	int      rc;

	rc = rmq_hdr_decode(h, p, len);
	free(p);
	return rc;
}

static int
hello_decode_exact(struct rmq_hello *h, const uint8_t *body, size_t len)
{
	uint8_t *p = dup_exact(body, len);
	int      rc;

	rc = rmq_ctrl_decode_hello(h, p, len);
	free(p);
	return rc;
}

static void
hdr_init(struct rmq_hdr *h, uint8_t type, uint32_t len)
{
	memset(h, 0, sizeof(*h));
	h->version = RMQ_WIRE_VERSION;
	h->type    = type;
	h->credits = 7;
	h->conn    = 0x11223344u;
	h->msgid   = 0x55667788u;
	h->len     = len;
}

/* Encode h, decode it from a completion of len bytes, compare. */
static void
check_hdr_round_trip(uint8_t type, uint32_t len_field, size_t cq_len)
{
	uint8_t        buf[RMQ_RTS_SIZE + 64];
	struct rmq_hdr in, out;

	ck_assert_uint_le(cq_len, sizeof buf);
	memset(buf, 0xee, sizeof buf);
	hdr_init(&in, type, len_field);
	in.credits = 0xfedc;
	in.conn    = 0xdeadbeefu;
	in.msgid   = 0x80000001u;
	rmq_hdr_encode(buf, &in);
	memset(&out, 0, sizeof out);
	ck_assert_int_eq(hdr_decode_exact(&out, buf, cq_len), 0);
	ck_assert_uint_eq(out.version, in.version);
	ck_assert_uint_eq(out.type, in.type);
	ck_assert_uint_eq(out.credits, in.credits);
	ck_assert_uint_eq(out.conn, in.conn);
	ck_assert_uint_eq(out.msgid, in.msgid);
	ck_assert_uint_eq(out.len, in.len);
}

START_TEST(test_hdr_round_trip_data)
{
	check_hdr_round_trip(RMQ_MT_DATA, 0, RMQ_HDR_SIZE);
	check_hdr_round_trip(RMQ_MT_DATA, 5, RMQ_HDR_SIZE + 5);
	check_hdr_round_trip(RMQ_MT_DATA, 64, RMQ_HDR_SIZE + 64);
}
END_TEST

START_TEST(test_hdr_round_trip_data_inject)
{
	check_hdr_round_trip(
	    RMQ_MT_DATA | RMQ_MT_F_INJECT, 3, RMQ_HDR_SIZE + 3);
}
END_TEST

START_TEST(test_hdr_round_trip_rts)
{
	check_hdr_round_trip(RMQ_MT_RTS, 0, RMQ_RTS_SIZE);
}
END_TEST

START_TEST(test_hdr_round_trip_fin)
{
	/* FIN carries a status in len; the completion is the bare header. */
	check_hdr_round_trip(RMQ_MT_FIN, 0, RMQ_HDR_SIZE);
	check_hdr_round_trip(RMQ_MT_FIN, 104, RMQ_HDR_SIZE);
}
END_TEST

START_TEST(test_hdr_round_trip_credit)
{
	check_hdr_round_trip(RMQ_MT_CREDIT, 0, RMQ_HDR_SIZE);
	check_hdr_round_trip(RMQ_MT_CREDIT | RMQ_MT_F_INJECT, 0, RMQ_HDR_SIZE);
}
END_TEST

START_TEST(test_hdr_round_trip_cts)
{
	check_hdr_round_trip(RMQ_MT_CTS, 0, RMQ_HDR_SIZE);
	check_hdr_round_trip(RMQ_MT_CTS | RMQ_MT_F_INJECT, 0, RMQ_HDR_SIZE);
}
END_TEST

/* Every field little-endian at its documented offset (wire.h diagram). */
START_TEST(test_hdr_layout_little_endian)
{
	static const uint8_t want[RMQ_HDR_SIZE] = {
		0x01,                   /* version */
		0x81,                   /* DATA | F_INJECT */
		0x34, 0x12,             /* credits 0x1234 */
		0xef, 0xcd, 0xab, 0x89, /* conn 0x89abcdef */
		0x04, 0x03, 0x02, 0x01, /* msgid 0x01020304 */
		0xd0, 0xc0, 0xb0, 0xa0, /* len 0xa0b0c0d0 */
	};
	uint8_t        buf[RMQ_HDR_SIZE + 4];
	struct rmq_hdr h;

	memset(buf, 0x5a, sizeof buf);
	h.version = RMQ_WIRE_VERSION;
	h.type    = RMQ_MT_DATA | RMQ_MT_F_INJECT;
	h.credits = 0x1234;
	h.conn    = 0x89abcdefu;
	h.msgid   = 0x01020304u;
	h.len     = 0xa0b0c0d0u;
	rmq_hdr_encode(buf, &h);
	ck_assert_mem_eq(buf, want, RMQ_HDR_SIZE);
	/* Nothing written past the header. */
	ck_assert_uint_eq(buf[RMQ_HDR_SIZE], 0x5a);
	ck_assert_uint_eq(buf[RMQ_HDR_SIZE + 3], 0x5a);
}
END_TEST

START_TEST(test_hdr_decode_short_buffer)
{
	uint8_t        buf[RMQ_HDR_SIZE];
	struct rmq_hdr h;
	size_t         n;

	hdr_init(&h, RMQ_MT_CREDIT, 0);
	rmq_hdr_encode(buf, &h);
	for (n = 0; n < RMQ_HDR_SIZE; n++)
		ck_assert_int_eq(hdr_decode_exact(&h, buf, n), -RMQ_EPROTO);
}
END_TEST

START_TEST(test_hdr_decode_wrong_version)
{
	static const uint8_t versions[] = { 0, 2, 0x7f, 0xff };
	uint8_t              buf[RMQ_HDR_SIZE];
	struct rmq_hdr       h;
	size_t               i;

	for (i = 0; i < sizeof versions; i++) {
		hdr_init(&h, RMQ_MT_CREDIT, 0);
		h.version = versions[i];
		rmq_hdr_encode(buf, &h);
		ck_assert_int_eq(hdr_decode_exact(&h, buf, sizeof buf),
		                 -RMQ_EVERSION);
	}
}
END_TEST

START_TEST(test_hdr_decode_unknown_type)
{
	static const uint8_t types[] = {
		0, RMQ_MT_CTS + 1, 7, 0x40, 0x7f, RMQ_MT_F_INJECT,
		RMQ_MT_F_INJECT | (RMQ_MT_CTS + 1), 0xff,
	};
	uint8_t        buf[RMQ_HDR_SIZE];
	struct rmq_hdr h;
	size_t         i;

	for (i = 0; i < sizeof types; i++) {
		hdr_init(&h, types[i], 0);
		rmq_hdr_encode(buf, &h);
		ck_assert_msg(hdr_decode_exact(&h, buf, sizeof buf) ==
		                  -RMQ_EPROTO,
		              "type 0x%02x accepted", types[i]);
	}
}
END_TEST

START_TEST(test_hdr_decode_data_len_mismatch)
{
	uint8_t        buf[RMQ_HDR_SIZE + 32];
	struct rmq_hdr h;

	memset(buf, 0, sizeof buf);
	hdr_init(&h, RMQ_MT_DATA, 10);
	rmq_hdr_encode(buf, &h);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE + 10), 0);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE + 9),
	                 -RMQ_EPROTO);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE + 11),
	                 -RMQ_EPROTO);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE),
	                 -RMQ_EPROTO);
	/* A length that would wrap if added to the header size. */
	hdr_init(&h, RMQ_MT_DATA, UINT32_MAX);
	rmq_hdr_encode(buf, &h);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE + 32),
	                 -RMQ_EPROTO);
}
END_TEST

START_TEST(test_hdr_decode_rts_wrong_length)
{
	static const size_t lens[] = {
		RMQ_HDR_SIZE, RMQ_RTS_SIZE - 1, RMQ_RTS_SIZE + 1,
		RMQ_RTS_SIZE + 16,
	};
	uint8_t        buf[RMQ_RTS_SIZE + 16];
	struct rmq_hdr h;
	size_t         i;

	memset(buf, 0, sizeof buf);
	hdr_init(&h, RMQ_MT_RTS, 0);
	rmq_hdr_encode(buf, &h);
	for (i = 0; i < sizeof lens / sizeof lens[0]; i++)
		ck_assert_int_eq(hdr_decode_exact(&h, buf, lens[i]),
		                 -RMQ_EPROTO);
}
END_TEST

START_TEST(test_hdr_decode_rts_inject_flag)
{
	uint8_t        buf[RMQ_RTS_SIZE];
	struct rmq_hdr h;

	memset(buf, 0, sizeof buf);
	hdr_init(&h, RMQ_MT_RTS | RMQ_MT_F_INJECT, 0);
	rmq_hdr_encode(buf, &h);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, sizeof buf), -RMQ_EPROTO);
}
END_TEST

START_TEST(test_hdr_decode_fin_with_payload)
{
	uint8_t        buf[RMQ_HDR_SIZE + 8];
	struct rmq_hdr h;

	memset(buf, 0, sizeof buf);
	hdr_init(&h, RMQ_MT_FIN, 0);
	rmq_hdr_encode(buf, &h);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE + 1),
	                 -RMQ_EPROTO);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE + 8),
	                 -RMQ_EPROTO);
}
END_TEST

START_TEST(test_hdr_decode_credit_with_payload)
{
	uint8_t        buf[RMQ_HDR_SIZE + 8];
	struct rmq_hdr h;

	memset(buf, 0, sizeof buf);
	hdr_init(&h, RMQ_MT_CREDIT, 0);
	rmq_hdr_encode(buf, &h);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE + 1),
	                 -RMQ_EPROTO);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE + 8),
	                 -RMQ_EPROTO);
}
END_TEST

START_TEST(test_hdr_decode_cts_with_payload)
{
	uint8_t        buf[RMQ_HDR_SIZE + 8];
	struct rmq_hdr h;

	memset(buf, 0, sizeof buf);
	hdr_init(&h, RMQ_MT_CTS, 0);
	rmq_hdr_encode(buf, &h);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE + 1),
	                 -RMQ_EPROTO);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, RMQ_HDR_SIZE + 8),
	                 -RMQ_EPROTO);
}
END_TEST

START_TEST(test_rts_round_trip)
{
	uint8_t        buf[RMQ_RTS_SIZE];
	struct rmq_rts in, out;
	struct rmq_hdr h;

	in.len    = 0xfedcba9876543210ull;
	in.raddr  = 0x00007fffdeadbeefull;
	in.rkey   = UINT64_MAX;
	in.cookie = 0xcafef00du;
	in.flags  = 0;
	hdr_init(&h, RMQ_MT_RTS, 0);
	rmq_hdr_encode(buf, &h);
	rmq_rts_encode(buf + RMQ_HDR_SIZE, &in);
	ck_assert_int_eq(hdr_decode_exact(&h, buf, sizeof buf), 0);
	memset(&out, 0xcc, sizeof out);
	ck_assert_int_eq(rmq_rts_decode(&out, buf + RMQ_HDR_SIZE), 0);
	ck_assert(out.len == in.len);
	ck_assert(out.raddr == in.raddr);
	ck_assert(out.rkey == in.rkey);
	ck_assert_uint_eq(out.cookie, in.cookie);
	ck_assert_uint_eq(out.flags, 0);
}
END_TEST

START_TEST(test_rts_round_trip_send_flag)
{
	uint8_t        buf[RMQ_RTS_EXT_SIZE];
	struct rmq_rts in, out;

	memset(&in, 0, sizeof in);
	in.len    = (uint64_t) 1 << 40;
	in.cookie = 1;
	in.flags  = RMQ_RTS_F_SEND;
	rmq_rts_encode(buf, &in);
	ck_assert_int_eq(rmq_rts_decode(&out, buf), 0);
	ck_assert_uint_eq(out.flags, RMQ_RTS_F_SEND);
	ck_assert(out.len == in.len);
}
END_TEST

START_TEST(test_rts_decode_unknown_flags)
{
	/* Unknown bits, and more than one way of moving the payload. */
	static const uint32_t flags[] = {
		0x10, RMQ_RTS_F_SEND | RMQ_RTS_F_WRITE,
		RMQ_RTS_F_SEND | RMQ_RTS_F_CMA, RMQ_RTS_F_WRITE | RMQ_RTS_F_CMA,
		0x100, 0x80000000u, UINT32_MAX,
		/* SHARE: with CMA only */
		RMQ_RTS_F_SHARE, RMQ_RTS_F_SHARE | RMQ_RTS_F_SEND,
		RMQ_RTS_F_SHARE | RMQ_RTS_F_WRITE,
		RMQ_RTS_F_SHARE | RMQ_RTS_F_CMA | RMQ_RTS_F_SEND,
	};
	uint8_t        buf[RMQ_RTS_EXT_SIZE];
	struct rmq_rts r;
	size_t         i;

	for (i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		memset(&r, 0, sizeof r);
		r.flags = flags[i];
		rmq_rts_encode(buf, &r);
		ck_assert_int_eq(rmq_rts_decode(&r, buf), -RMQ_EPROTO);
	}
	/* Each alone is one. */
	for (i = 0; i < 4; i++) {
		memset(&r, 0, sizeof r);
		r.flags = i == 3 ? RMQ_RTS_F_CMA : (uint32_t) i;
		rmq_rts_encode(buf, &r);
		ck_assert_int_eq(rmq_rts_decode(&r, buf), 0);
	}
	memset(&r, 0, sizeof r);
	r.flags = RMQ_RTS_F_CMA | RMQ_RTS_F_SHARE;
	rmq_rts_encode(buf, &r);
	ck_assert_int_eq(rmq_rts_decode(&r, buf), 0);
	ck_assert_uint_eq(r.flags, RMQ_RTS_F_CMA | RMQ_RTS_F_SHARE);
}
END_TEST

START_TEST(test_rts_layout_little_endian)
{
	static const uint8_t want[RMQ_RTS_EXT_SIZE] = {
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* len */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, /* raddr */
		0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21, /* rkey */
		0x34, 0x33, 0x32, 0x31,                         /* cookie */
		0x01, 0x00, 0x00, 0x00,                         /* flags */
	};
	uint8_t        buf[RMQ_RTS_EXT_SIZE];
	struct rmq_rts r;

	memset(buf, 0xff, sizeof buf);
	r.len    = 0x0102030405060708ull;
	r.raddr  = 0x1112131415161718ull;
	r.rkey   = 0x2122232425262728ull;
	r.cookie = 0x31323334u;
	r.flags  = RMQ_RTS_F_SEND;
	rmq_rts_encode(buf, &r);
	ck_assert_mem_eq(buf, want, sizeof want);
}
END_TEST

/* A HELLO with every field set, the address at its maximum size. */
static void
hello_fill(struct rmq_hello *h)
{
	size_t i;

	memset(h, 0, sizeof(*h));
	h->pattern = 0xbeef;
	strcpy(h->prov, "verbs;ofi_rxm");
	h->conn     = 0x01020304u;
	h->rcvhwm   = 1000;
	h->maxmsg   = 0x8877665544332211ull;
	h->features = 0; /* only RMQ_FEAT_RING is defined: see the ring test */
	h->eager_max = 0x00c0ffeeu;
	h->addr_len = RMQ_ADDR_MAX;
	for (i = 0; i < RMQ_ADDR_MAX; i++)
		h->addr[i] = (uint8_t) (i * 7 + 3);
}

/* Encode h; return the frame length, check the frame header. */
static size_t
hello_encode_checked(uint8_t *frame, const struct rmq_hello *h)
{
	size_t n;
	size_t body_len;
	int    kind;

	n = rmq_ctrl_encode_hello(frame, h);
	ck_assert_uint_gt(n, RMQ_CTRL_HDR_SIZE);
	ck_assert_uint_le(n, FRAME_MAX);
	ck_assert_int_eq(rmq_ctrl_decode_hdr(frame, &kind, &body_len), 0);
	ck_assert_int_eq(kind, RMQ_CK_HELLO);
	ck_assert_uint_eq(body_len, n - RMQ_CTRL_HDR_SIZE);
	return n;
}

START_TEST(test_ctrl_hello_round_trip)
{
	uint8_t          frame[FRAME_MAX];
	struct rmq_hello in, out;
	size_t           n;

	hello_fill(&in);
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 0);
	ck_assert_uint_eq(out.pattern, in.pattern);
	ck_assert_str_eq(out.prov, in.prov);
	ck_assert_uint_eq(out.conn, in.conn);
	ck_assert_uint_eq(out.rcvhwm, in.rcvhwm);
	ck_assert(out.maxmsg == in.maxmsg);
	ck_assert_uint_eq(out.features, in.features);
	ck_assert_uint_eq(out.eager_max, in.eager_max);
	ck_assert_uint_eq(out.addr_len, RMQ_ADDR_MAX);
	ck_assert_mem_eq(out.addr, in.addr, RMQ_ADDR_MAX);
}
END_TEST

START_TEST(test_ctrl_hello_round_trip_small_addr)
{
	uint8_t          frame[FRAME_MAX];
	struct rmq_hello in, out;
	size_t           n;

	hello_fill(&in);
	strcpy(in.prov, "shm");
	in.maxmsg   = UINT64_MAX;
	in.addr_len = 1;
	n           = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 0);
	ck_assert_str_eq(out.prov, "shm");
	ck_assert(out.maxmsg == UINT64_MAX);
	ck_assert_uint_eq(out.addr_len, 1);
	ck_assert_uint_eq(out.addr[0], in.addr[0]);
}
END_TEST

/* The ring block after the address: round trip, and what is refused. */
START_TEST(test_ctrl_hello_ring_round_trip)
{
	uint8_t          frame[FRAME_MAX];
	struct rmq_hello in, out;
	size_t           n;

	hello_fill(&in);
	in.features       = RMQ_FEAT_RING;
	in.ring_addr      = 0x1122334455667788ull;
	in.ring_key       = 0x99aabbccddeeff00ull;
	in.ring_slots     = 64;
	in.ring_slot_size = 4096;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 0);
	ck_assert(out.ring_addr == in.ring_addr);
	ck_assert(out.ring_key == in.ring_key);
	ck_assert_uint_eq(out.ring_slots, 64);
	ck_assert_uint_eq(out.ring_slot_size, 4096);
	/* Without its 24 bytes, or with too few or too many slots. */
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE - 24),
	                 -RMQ_EPROTO);
	in.ring_slots = 3;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 -RMQ_EPROTO);
	in.ring_slots     = 64;
	in.ring_slot_size = 32;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 -RMQ_EPROTO);
	/* An unknown feature bit. */
	in.ring_slot_size = 4096;
	in.features       = RMQ_FEAT_RING | 0x80000000u;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 -RMQ_EPROTO);
}
END_TEST

/* The local block (RMQ_FEAT_LOCAL, after the ring's): round trip, and
 * what is refused. */
START_TEST(test_ctrl_hello_local_round_trip)
{
	uint8_t          frame[FRAME_MAX];
	struct rmq_hello in, out;
	size_t           n;
	int              i;

	hello_fill(&in);
	in.features       = RMQ_FEAT_RING | RMQ_FEAT_LOCAL;
	in.ring_slots     = 64;
	in.ring_slot_size = 4096;
	for (i = 0; i < 16; i++)
		in.host[i] = (uint8_t) (0xa0 + i);
	in.host_name = 0x0102030405060708ull;
	in.uid       = 1000;
	in.pid       = 4242;
	in.lfd       = 17;
	in.lefd      = 0xdeadbeef;
	in.lsize     = 512u << 10;
	in.lflags    = RMQ_LOCAL_F_MAPPED;
	in.lnonce    = 0x1122334455667788ull;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 0);
	ck_assert(memcmp(out.host, in.host, 16) == 0);
	ck_assert(out.host_name == in.host_name);
	ck_assert_uint_eq(out.uid, 1000);
	ck_assert_uint_eq(out.pid, 4242);
	ck_assert_uint_eq(out.lfd, 17);
	ck_assert_uint_eq(out.lefd, 0xdeadbeef);
	ck_assert_uint_eq(out.lsize, 512u << 10);
	ck_assert_uint_eq(out.lflags, RMQ_LOCAL_F_MAPPED);
	ck_assert(out.lnonce == in.lnonce);
	ck_assert_uint_eq(out.ring_slots, 64);
	/* Short by a byte. */
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE - 1),
	                 -RMQ_EPROTO);
	/* A ring that is not a power of two, too small, too big. */
	in.lsize = (512u << 10) + 8;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 -RMQ_EPROTO);
	in.lsize = 32u << 10;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 -RMQ_EPROTO);
	in.lsize = 128u << 20;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 -RMQ_EPROTO);
	/* No ring (fd 0): any size; an unknown flag is refused. */
	in.lfd   = 0;
	in.lsize = 0;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 0);
	in.lflags = RMQ_LOCAL_F_MAPPED | RMQ_LOCAL_F_SHARE;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 0);
	ck_assert_uint_eq(out.lflags, RMQ_LOCAL_F_MAPPED | RMQ_LOCAL_F_SHARE);
	in.lflags = 0x4;
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 -RMQ_EPROTO);
}
END_TEST

/* The 32-bit immediates: fields do not bleed into each other. */
START_TEST(test_imm_encoding)
{
	uint32_t d = RMQ_IMM_RING_MAKE(0x3fff, 0xffff);

	ck_assert_uint_eq(RMQ_IMM_KIND(d), RMQ_IMM_RING);
	ck_assert_uint_eq(RMQ_IMM_RING_PEER(d), 0x3fff);
	ck_assert_uint_eq(RMQ_IMM_RING_SLOT(d), 0xffff);
	d = RMQ_IMM_RING_MAKE(5, 7);
	ck_assert_uint_eq(RMQ_IMM_RING_PEER(d), 5);
	ck_assert_uint_eq(RMQ_IMM_RING_SLOT(d), 7);
	d = RMQ_IMM_WRITE_MAKE(0x3fffffffu);
	ck_assert_uint_eq(RMQ_IMM_KIND(d), RMQ_IMM_WRITE);
	ck_assert_uint_eq(RMQ_IMM_WRITE_ID(d), 0x3fffffffu);
	/* An id wider than 30 bits is cut, never into the kind bits. */
	d = RMQ_IMM_WRITE_MAKE(0xffffffffu);
	ck_assert_uint_eq(RMQ_IMM_KIND(d), RMQ_IMM_WRITE);
}
END_TEST

/* BATCH: len is every byte after the header, msgid the count (>= 1). */
START_TEST(test_batch_header)
{
	uint8_t        b[RMQ_HDR_SIZE + 16] = {0};
	struct rmq_hdr h = {.version = RMQ_WIRE_VERSION, .type = RMQ_MT_BATCH,
	                    .msgid = 2, .len = 16};
	struct rmq_hdr out;

	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, sizeof b), 0);
	ck_assert_uint_eq(out.msgid, 2);
	ck_assert_uint_eq(out.len, 16);
	/* Length that disagrees with the completion. */
	ck_assert_int_eq(rmq_hdr_decode(&out, b, sizeof b - 8), -RMQ_EPROTO);
	/* No messages. */
	h.msgid = 0;
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, sizeof b), -RMQ_EPROTO);
	/* Never an inject. */
	h.msgid = 1;
	h.type  = RMQ_MT_BATCH | RMQ_MT_F_INJECT;
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, sizeof b), -RMQ_EPROTO);
}
END_TEST

/* RBATCH: at the start of a ring message (16 bytes decoded, as RING); at
 * least one message, never an inject. */
START_TEST(test_rbatch_header)
{
	uint8_t        b[RMQ_HDR_SIZE] = {0};
	struct rmq_hdr h = {.version = RMQ_WIRE_VERSION, .type = RMQ_MT_RBATCH,
	                    .msgid = 3, .len = 4000};
	struct rmq_hdr out;

	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, sizeof b), 0);
	ck_assert_uint_eq(out.msgid, 3);
	ck_assert_uint_eq(out.len, 4000);
	h.msgid = 0;
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, sizeof b), -RMQ_EPROTO);
	h.msgid = 1;
	h.type  = RMQ_MT_RBATCH | RMQ_MT_F_INJECT;
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, sizeof b), -RMQ_EPROTO);
}
END_TEST

/* A batch body: exactly count items, each whole, none over the limit. */
START_TEST(test_batch_check)
{
	uint8_t  b[64] = {0};
	uint32_t found;

	/* Two items: 5 bytes (padded to 8) and 0 bytes. */
	rmq_put32(b, 5);
	rmq_put32(b + 4, 11);
	rmq_put32(b + 16, 0);
	rmq_put32(b + 20, 12);
	ck_assert_uint_eq(rmq_batch_item_size(5), 16);
	ck_assert_uint_eq(rmq_batch_item_size(0), 8);
	ck_assert_int_eq(rmq_batch_check(b, 24, 2, &found), 0);
	ck_assert_uint_eq(found, 2);
	/* Fewer items said than there are bytes for, or more. */
	ck_assert_int_eq(rmq_batch_check(b, 24, 1, &found), -RMQ_EPROTO);
	ck_assert_int_eq(rmq_batch_check(b, 24, 3, &found), -RMQ_EPROTO);
	ck_assert_uint_eq(found, 2);
	/* An item running past the end. */
	ck_assert_int_eq(rmq_batch_check(b, 12, 1, &found), -RMQ_EPROTO);
	ck_assert_uint_eq(found, 0);
	/* An item over RMQ_BATCH_ITEM_MAX. */
	rmq_put32(b, RMQ_BATCH_ITEM_MAX + 1);
	ck_assert_int_eq(rmq_batch_check(b, 24, 2, &found), -RMQ_EPROTO);
	ck_assert_uint_eq(found, 0);
	/* A length whose padding would wrap. */
	rmq_put32(b, 0xfffffffcu);
	ck_assert_int_eq(rmq_batch_check(b, 24, 2, &found), -RMQ_EPROTO);
}
END_TEST

/* SEG: the header's len is this piece; 8 bytes of total follow. */
START_TEST(test_seg_header)
{
	uint8_t        b[RMQ_SEG_HDR_SIZE + 5];
	struct rmq_hdr h = {.version = RMQ_WIRE_VERSION, .type = RMQ_MT_SEG,
	                    .len = 5};
	struct rmq_hdr out;

	rmq_hdr_encode(b, &h);
	rmq_seg_encode(b + RMQ_HDR_SIZE, 0x0102030405060708ull);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, sizeof b), 0);
	ck_assert(rmq_seg_decode(b + RMQ_HDR_SIZE) == 0x0102030405060708ull);
	ck_assert_uint_eq(b[RMQ_HDR_SIZE], 0x08); /* little-endian */
	/* Piece length that disagrees with the completion; too short. */
	ck_assert_int_eq(rmq_hdr_decode(&out, b, sizeof b - 1), -RMQ_EPROTO);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_HDR_SIZE + 4),
	                 -RMQ_EPROTO);
	/* GRANT and RCREDIT have fixed sizes. */
	h.type = RMQ_MT_GRANT;
	h.len  = 0;
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_HDR_SIZE), -RMQ_EPROTO);
	h.type = RMQ_MT_RCREDIT;
	h.len  = 9;
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_HDR_SIZE), 0);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_HDR_SIZE + 1),
	                 -RMQ_EPROTO);
}
END_TEST

/* HELP carries the RTS layout and nothing in len; HELPED is a bare
 * header (its status in len). */
START_TEST(test_help_header)
{
	uint8_t        b[RMQ_RTS_SIZE + 8];
	struct rmq_hdr h = {.version = RMQ_WIRE_VERSION, .type = RMQ_MT_HELP,
	                    .msgid = 7};
	struct rmq_hdr out;

	memset(b, 0, sizeof b);
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_RTS_SIZE), 0);
	ck_assert_int_eq(out.type, RMQ_MT_HELP);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_HDR_SIZE), -RMQ_EPROTO);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_RTS_SIZE + 8),
	                 -RMQ_EPROTO);
	h.len = 1;
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_RTS_SIZE), -RMQ_EPROTO);
	h.len  = 0;
	h.type = RMQ_MT_HELP | RMQ_MT_F_INJECT;
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_RTS_SIZE), -RMQ_EPROTO);
	h.type = RMQ_MT_HELPED;
	h.len  = 1; /* EPERM */
	rmq_hdr_encode(b, &h);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_HDR_SIZE), 0);
	ck_assert_uint_eq(out.len, 1);
	ck_assert_int_eq(rmq_hdr_decode(&out, b, RMQ_RTS_SIZE), -RMQ_EPROTO);
}
END_TEST

/* A name that fills the whole array (no NUL) is cut, not overread. */
START_TEST(test_ctrl_hello_long_provname_truncated)
{
	uint8_t          frame[FRAME_MAX];
	struct rmq_hello in, out;
	size_t           n;

	hello_fill(&in);
	memset(in.prov, 'p', sizeof in.prov);
	n = hello_encode_checked(frame, &in);
	ck_assert_int_eq(hello_decode_exact(&out, frame + RMQ_CTRL_HDR_SIZE,
	                                    n - RMQ_CTRL_HDR_SIZE),
	                 0);
	ck_assert_uint_eq(strlen(out.prov), RMQ_PROVNAME_MAX - 1);
	ck_assert_mem_eq(out.prov, in.prov, RMQ_PROVNAME_MAX - 1);
}
END_TEST

START_TEST(test_ctrl_reject_round_trip)
{
	uint8_t           frame[FRAME_MAX];
	struct rmq_reject in, out;
	size_t            n, body_len;
	int               kind;

	memset(&in, 0, sizeof in);
	in.code = RMQ_EPATTERN;
	strcpy(in.reason, "pattern REQ does not talk to PAIR");
	n = rmq_ctrl_encode_reject(frame, &in);
	ck_assert_uint_eq(n, RMQ_CTRL_HDR_SIZE + 4 + strlen(in.reason));
	ck_assert_int_eq(rmq_ctrl_decode_hdr(frame, &kind, &body_len), 0);
	ck_assert_int_eq(kind, RMQ_CK_REJECT);
	ck_assert_uint_eq(body_len, n - RMQ_CTRL_HDR_SIZE);
	ck_assert_int_eq(
	    rmq_ctrl_decode_reject(&out, frame + RMQ_CTRL_HDR_SIZE, body_len),
	    0);
	ck_assert_uint_eq(out.code, RMQ_EPATTERN);
	ck_assert_str_eq(out.reason, in.reason);
}
END_TEST

START_TEST(test_ctrl_reject_empty_reason)
{
	uint8_t           frame[FRAME_MAX];
	struct rmq_reject in, out;
	size_t            n;

	memset(&in, 0, sizeof in);
	in.code = RMQ_EPROVIDER;
	n       = rmq_ctrl_encode_reject(frame, &in);
	ck_assert_uint_eq(n, RMQ_CTRL_HDR_SIZE + 4);
	ck_assert_int_eq(
	    rmq_ctrl_decode_reject(&out, frame + RMQ_CTRL_HDR_SIZE, 4), 0);
	ck_assert_uint_eq(out.code, RMQ_EPROVIDER);
	ck_assert_str_eq(out.reason, "");
}
END_TEST

/* Encoding a reason with no NUL sends 199 bytes at most. */
START_TEST(test_ctrl_reject_encode_truncates_reason)
{
	uint8_t           frame[FRAME_MAX];
	struct rmq_reject in, out;
	size_t            n, rl = sizeof in.reason - 1;

	memset(&in, 'r', sizeof in);
	in.code = 7;
	n       = rmq_ctrl_encode_reject(frame, &in);
	ck_assert_uint_eq(n, RMQ_CTRL_HDR_SIZE + 4 + rl);
	ck_assert_int_eq(rmq_ctrl_decode_reject(
	                     &out, frame + RMQ_CTRL_HDR_SIZE, 4 + rl),
	                 0);
	ck_assert_uint_eq(strlen(out.reason), rl);
	ck_assert_mem_eq(out.reason, in.reason, rl);
}
END_TEST

/* A peer may send a longer reason: it is cut and NUL-terminated. */
START_TEST(test_ctrl_reject_decode_truncates_reason)
{
	uint8_t           body[4 + 600];
	uint8_t          *p;
	struct rmq_reject out;

	memset(body, 'x', sizeof body);
	body[0] = 0x2a;
	body[1] = 0;
	body[2] = 0;
	body[3] = 0;
	p       = dup_exact(body, sizeof body);
	memset(&out, 0xcc, sizeof out);
	ck_assert_int_eq(rmq_ctrl_decode_reject(&out, p, sizeof body), 0);
	free(p);
	ck_assert_uint_eq(out.code, 42);
	ck_assert_uint_eq(out.reason[sizeof out.reason - 1], '\0');
	ck_assert_uint_eq(strlen(out.reason), sizeof out.reason - 1);
}
END_TEST

START_TEST(test_ctrl_decode_reject_short)
{
	uint8_t           body[4] = { 1, 0, 0, 0 };
	uint8_t          *p;
	struct rmq_reject out;
	size_t            n;

	for (n = 0; n < sizeof body; n++) {
		p = dup_exact(body, n);
		ck_assert_int_eq(rmq_ctrl_decode_reject(&out, p, n),
		                 -RMQ_EPROTO);
		free(p);
	}
}
END_TEST

START_TEST(test_ctrl_bye_round_trip)
{
	static const uint8_t want[RMQ_CTRL_HDR_SIZE + 8] = {
		'R', 'M', 'Q', 'C', RMQ_WIRE_VERSION, RMQ_CK_BYE, 8, 0,
		0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
	};
	uint8_t  frame[FRAME_MAX];
	uint64_t sent = 0, took = 0;
	size_t   n, body_len;
	int      kind;

	n = rmq_ctrl_encode_bye(frame, 0x0123456789abcdefull, RMQ_BYE_NO_TOOK);
	ck_assert_uint_eq(n, sizeof want);
	ck_assert_mem_eq(frame, want, sizeof want);
	ck_assert_int_eq(rmq_ctrl_decode_hdr(frame, &kind, &body_len), 0);
	ck_assert_int_eq(kind, RMQ_CK_BYE);
	ck_assert_uint_eq(body_len, 8);
	ck_assert_int_eq(rmq_ctrl_decode_bye(&sent, &took,
	                                     frame + RMQ_CTRL_HDR_SIZE,
	                                     body_len),
	                 0);
	ck_assert(sent == 0x0123456789abcdefull);
	ck_assert(took == RMQ_BYE_NO_TOOK);
}
END_TEST

/* To a peer that said RMQ_FEAT_TOOK: what we took of its, after. */
START_TEST(test_ctrl_bye_took_round_trip)
{
	static const uint8_t want[RMQ_CTRL_HDR_SIZE + 16] = {
		'R', 'M', 'Q', 'C', RMQ_WIRE_VERSION, RMQ_CK_BYE, 16, 0,
		0x05, 0, 0, 0, 0, 0, 0, 0,
		0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
	};
	uint8_t  frame[FRAME_MAX];
	uint64_t sent = 0, took = 0;
	size_t   n, body_len;
	int      kind;

	n = rmq_ctrl_encode_bye(frame, 5, 0x0123456789abcdefull);
	ck_assert_uint_eq(n, sizeof want);
	ck_assert_mem_eq(frame, want, sizeof want);
	ck_assert_int_eq(rmq_ctrl_decode_hdr(frame, &kind, &body_len), 0);
	ck_assert_int_eq(kind, RMQ_CK_BYE);
	ck_assert_uint_eq(body_len, 16);
	ck_assert_int_eq(rmq_ctrl_decode_bye(&sent, &took,
	                                     frame + RMQ_CTRL_HDR_SIZE,
	                                     body_len),
	                 0);
	ck_assert(sent == 5);
	ck_assert(took == 0x0123456789abcdefull);
	n = rmq_ctrl_encode_bye(frame, 5, 0);
	ck_assert_uint_eq(n, sizeof want);
	ck_assert_int_eq(rmq_ctrl_decode_bye(&sent, &took,
	                                     frame + RMQ_CTRL_HDR_SIZE, 16),
	                 0);
	ck_assert(took == 0);
}
END_TEST

START_TEST(test_ctrl_decode_bye_wrong_length)
{
	static const size_t lens[] = { 0, 1, 7, 9, 15, 17, 24 };
	uint8_t             body[24];
	uint8_t            *p;
	uint64_t            sent = 0, took = 0;
	size_t              i;

	memset(body, 1, sizeof body);
	for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		p = dup_exact(body, lens[i]);
		ck_assert_int_eq(rmq_ctrl_decode_bye(&sent, &took, p, lens[i]),
		                 -RMQ_EPROTO);
		free(p);
	}
}
END_TEST

START_TEST(test_ctrl_bye_ack)
{
	static const uint8_t want[RMQ_CTRL_HDR_SIZE] = {
		'R', 'M', 'Q', 'C', RMQ_WIRE_VERSION, RMQ_CK_BYE_ACK, 0, 0,
	};
	uint8_t frame[FRAME_MAX];
	size_t  n, body_len = 99;
	int     kind = 0;

	n = rmq_ctrl_encode_bye_ack(frame);
	ck_assert_uint_eq(n, RMQ_CTRL_HDR_SIZE);
	ck_assert_mem_eq(frame, want, sizeof want);
	ck_assert_int_eq(rmq_ctrl_decode_hdr(frame, &kind, &body_len), 0);
	ck_assert_int_eq(kind, RMQ_CK_BYE_ACK);
	ck_assert_uint_eq(body_len, 0);
}
END_TEST

/* The body length is little-endian in bytes 6 and 7. */
START_TEST(test_ctrl_hdr_layout)
{
	uint8_t          frame[FRAME_MAX];
	struct rmq_hello h;
	size_t           n;

	hello_fill(&h);
	n = rmq_ctrl_encode_hello(frame, &h);
	ck_assert_mem_eq(frame, "RMQC", 4);
	ck_assert_uint_eq(frame[4], RMQ_WIRE_VERSION);
	ck_assert_uint_eq(frame[5], RMQ_CK_HELLO);
	ck_assert_uint_eq(frame[6], (n - RMQ_CTRL_HDR_SIZE) & 0xff);
	ck_assert_uint_eq(frame[7], (n - RMQ_CTRL_HDR_SIZE) >> 8);
}
END_TEST

static void
ctrl_hdr_make(uint8_t *b, uint8_t version, uint8_t kind, uint16_t len)
{
	memcpy(b, RMQ_CTRL_MAGIC, 4);
	b[4] = version;
	b[5] = kind;
	b[6] = (uint8_t) len;
	b[7] = (uint8_t) (len >> 8);
}

static int
ctrl_decode_hdr_exact(const uint8_t *b)
{
	uint8_t *p = dup_exact(b, RMQ_CTRL_HDR_SIZE);
	size_t   body_len;
	int      kind, rc;

	rc = rmq_ctrl_decode_hdr(p, &kind, &body_len);
	free(p);
	return rc;
}

START_TEST(test_ctrl_decode_hdr_bad_magic)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE];
	size_t  i;

	for (i = 0; i < 4; i++) {
		ctrl_hdr_make(b, RMQ_WIRE_VERSION, RMQ_CK_BYE, 8);
		b[i] ^= 0x20; /* "rMQC", "RmQC", ... */
		ck_assert_int_eq(ctrl_decode_hdr_exact(b), -RMQ_EPROTO);
	}
	memset(b, 0, sizeof b);
	ck_assert_int_eq(ctrl_decode_hdr_exact(b), -RMQ_EPROTO);
}
END_TEST

START_TEST(test_ctrl_decode_hdr_wrong_version)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE];

	ctrl_hdr_make(b, 0, RMQ_CK_BYE, 8);
	ck_assert_int_eq(ctrl_decode_hdr_exact(b), -RMQ_EVERSION);
	ctrl_hdr_make(b, RMQ_WIRE_VERSION + 1, RMQ_CK_BYE, 8);
	ck_assert_int_eq(ctrl_decode_hdr_exact(b), -RMQ_EVERSION);
	ctrl_hdr_make(b, 0xff, RMQ_CK_HELLO, 100);
	ck_assert_int_eq(ctrl_decode_hdr_exact(b), -RMQ_EVERSION);
}
END_TEST

START_TEST(test_ctrl_decode_hdr_oversized_body)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE];

	ctrl_hdr_make(b, RMQ_WIRE_VERSION, RMQ_CK_HELLO, RMQ_CTRL_BODY_MAX);
	ck_assert_int_eq(ctrl_decode_hdr_exact(b), 0);
	ctrl_hdr_make(
	    b, RMQ_WIRE_VERSION, RMQ_CK_HELLO, RMQ_CTRL_BODY_MAX + 1);
	ck_assert_int_eq(ctrl_decode_hdr_exact(b), -RMQ_EPROTO);
	ctrl_hdr_make(b, RMQ_WIRE_VERSION, RMQ_CK_HELLO, 0xffff);
	ck_assert_int_eq(ctrl_decode_hdr_exact(b), -RMQ_EPROTO);
}
END_TEST

START_TEST(test_ctrl_decode_hdr_unknown_kind)
{
	static const uint8_t kinds[] = { 0, RMQ_CK_AUTH + 1, 0x80, 0xff };
	uint8_t              b[RMQ_CTRL_HDR_SIZE];
	size_t               i;

	for (i = 0; i < sizeof kinds; i++) {
		ctrl_hdr_make(b, RMQ_WIRE_VERSION, kinds[i], 0);
		ck_assert_int_eq(ctrl_decode_hdr_exact(b), -RMQ_EPROTO);
	}
}
END_TEST

/*
 * HELLO body offsets, for a provider name of length pl:
 *   0 pattern(2) 2 pl(1) 3 name(pl) 3+pl conn(4) rcvhwm(4) maxmsg(8)
 *   features(4) eager_max(4) addr_len(2) 29+pl addr
 */
#define HELLO_RCVHWM_OFF(pl) (3 + (pl) + 4)
#define HELLO_EAGER_OFF(pl)  (3 + (pl) + 20)
#define HELLO_ALEN_OFF(pl)   (3 + (pl) + 24)
#define HELLO_ADDR_OFF(pl)   (3 + (pl) + 26)

/* Encode a valid HELLO, copy its body out; returns the body length. */
static size_t
hello_body(uint8_t *body, const char *prov, uint16_t addr_len)
{
	uint8_t          frame[FRAME_MAX];
	struct rmq_hello h;
	size_t           n;

	hello_fill(&h);
	strcpy(h.prov, prov);
	h.addr_len = addr_len;
	n          = hello_encode_checked(frame, &h);
	memcpy(body, frame + RMQ_CTRL_HDR_SIZE, n - RMQ_CTRL_HDR_SIZE);
	return n - RMQ_CTRL_HDR_SIZE;
}

START_TEST(test_ctrl_hello_layout)
{
	uint8_t body[RMQ_CTRL_BODY_MAX];
	size_t  len = hello_body(body, "tcp", 4);

	ck_assert_uint_eq(len, 3 + 3 + 26 + 4);
	ck_assert_uint_eq(body[0], 0xef); /* pattern 0xbeef */
	ck_assert_uint_eq(body[1], 0xbe);
	ck_assert_uint_eq(body[2], 3);
	ck_assert_mem_eq(body + 3, "tcp", 3);
	ck_assert_uint_eq(body[HELLO_RCVHWM_OFF(3)], 1000 & 0xff);
	ck_assert_uint_eq(body[HELLO_RCVHWM_OFF(3) + 1], 1000 >> 8);
	ck_assert_uint_eq(body[HELLO_EAGER_OFF(3)], 0xee);
	ck_assert_uint_eq(body[HELLO_EAGER_OFF(3) + 3], 0x00);
	ck_assert_uint_eq(body[HELLO_ALEN_OFF(3)], 4);
	ck_assert_uint_eq(body[HELLO_ALEN_OFF(3) + 1], 0);
}
END_TEST

START_TEST(test_ctrl_decode_hello_empty_provname)
{
	uint8_t          body[RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;
	size_t           len = hello_body(body, "x", 8);

	/* Drop the one name byte and set its length to 0. */
	body[2] = 0;
	memmove(body + 3, body + 4, len - 4);
	ck_assert_int_eq(hello_decode_exact(&h, body, len - 1), -RMQ_EPROTO);
}
END_TEST

START_TEST(test_ctrl_decode_hello_provname_embedded_nul)
{
	uint8_t          body[RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;
	size_t           len = hello_body(body, "tcp;ofi_rxm", 8);

	body[3 + 3] = '\0'; /* "tcp\0ofi_rxm" */
	ck_assert_int_eq(hello_decode_exact(&h, body, len), -RMQ_EPROTO);
	body[3 + 3] = ';';
	body[3]     = '\0'; /* leading NUL */
	ck_assert_int_eq(hello_decode_exact(&h, body, len), -RMQ_EPROTO);
}
END_TEST

/* Name length 32 or more cannot be NUL-terminated in the struct. */
START_TEST(test_ctrl_decode_hello_provname_too_long)
{
	uint8_t          body[RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;
	size_t           len;

	memset(body, 0, sizeof body);
	body[2] = RMQ_PROVNAME_MAX;
	memset(body + 3, 'n', RMQ_PROVNAME_MAX);
	body[HELLO_RCVHWM_OFF(RMQ_PROVNAME_MAX)] = 1;
	body[HELLO_ALEN_OFF(RMQ_PROVNAME_MAX)]   = 4;
	len = HELLO_ADDR_OFF(RMQ_PROVNAME_MAX) + 4;
	ck_assert_int_eq(hello_decode_exact(&h, body, len), -RMQ_EPROTO);
	body[2] = 0xff;
	ck_assert_int_eq(hello_decode_exact(&h, body, len), -RMQ_EPROTO);
}
END_TEST

START_TEST(test_ctrl_decode_hello_addr_len_zero)
{
	uint8_t          body[RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;
	size_t           len = hello_body(body, "shm", 1);

	body[HELLO_ALEN_OFF(3)] = 0;
	ck_assert_int_eq(hello_decode_exact(&h, body, len - 1), -RMQ_EPROTO);
}
END_TEST

START_TEST(test_ctrl_decode_hello_addr_len_over_max)
{
	uint8_t          body[RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;
	size_t           len = hello_body(body, "shm", RMQ_ADDR_MAX);

	/* 513 bytes really follow: too long even though they are there. */
	body[HELLO_ALEN_OFF(3)]     = (RMQ_ADDR_MAX + 1) & 0xff;
	body[HELLO_ALEN_OFF(3) + 1] = (RMQ_ADDR_MAX + 1) >> 8;
	body[len]                   = 0x77;
	ck_assert_int_eq(hello_decode_exact(&h, body, len + 1), -RMQ_EPROTO);
	body[HELLO_ALEN_OFF(3)]     = 0xff;
	body[HELLO_ALEN_OFF(3) + 1] = 0xff;
	ck_assert_int_eq(hello_decode_exact(&h, body, len), -RMQ_EPROTO);
}
END_TEST

START_TEST(test_ctrl_decode_hello_addr_len_mismatch)
{
	uint8_t          body[RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;
	size_t           len = hello_body(body, "sockets", 16);

	ck_assert_int_eq(hello_decode_exact(&h, body, len), 0);
	/* Fewer bytes than announced. */
	ck_assert_int_eq(hello_decode_exact(&h, body, len - 1), -RMQ_EPROTO);
	/* Trailing bytes after the address. */
	body[len] = 0;
	ck_assert_int_eq(hello_decode_exact(&h, body, len + 1), -RMQ_EPROTO);
	/* Announced length smaller than what follows. */
	body[HELLO_ALEN_OFF(7)] = 15;
	ck_assert_int_eq(hello_decode_exact(&h, body, len), -RMQ_EPROTO);
}
END_TEST

START_TEST(test_ctrl_decode_hello_rcvhwm_zero)
{
	uint8_t          body[RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;
	size_t           len = hello_body(body, "efa", 32);

	memset(body + HELLO_RCVHWM_OFF(3), 0, 4);
	ck_assert_int_eq(hello_decode_exact(&h, body, len), -RMQ_EPROTO);
}
END_TEST

/* Every proper prefix of a valid body is rejected; the whole is not. */
START_TEST(test_ctrl_decode_hello_truncated)
{
	uint8_t          body[RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;
	size_t           len, n;

	len = hello_body(body, "verbs;ofi_rxm", RMQ_ADDR_MAX);
	for (n = 0; n < len; n++)
		ck_assert_msg(hello_decode_exact(&h, body, n) == -RMQ_EPROTO,
		              "prefix of %zu bytes (of %zu) accepted", n, len);
	ck_assert_int_eq(hello_decode_exact(&h, body, len), 0);
}
END_TEST

/* A small LCG: the same "random" cases on every run. */
static uint32_t
lcg(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

#define FUZZ_ITER   100000
#define FUZZ_MUT    20000
#define FUZZ_MAXLEN 1100

/* Run every decoder over b[0..len) (an exact-size heap block). */
static void
fuzz_one(const uint8_t *b, size_t len)
{
	struct rmq_hdr    h;
	struct rmq_rts    rts;
	struct rmq_hello  hello;
	struct rmq_reject rej;
	uint64_t          sent, took;
	size_t            body_len;
	int               kind, rc;

	rc = rmq_hdr_decode(&h, b, len);
	ck_assert_msg(rc <= 0, "rmq_hdr_decode: %d", rc);
	if (rc == 0 && (h.type & RMQ_MT_MASK) == RMQ_MT_RTS) {
		rc = rmq_rts_decode(&rts, b + RMQ_HDR_SIZE);
		ck_assert_msg(rc <= 0, "rmq_rts_decode: %d", rc);
	}
	if (len >= RMQ_CTRL_HDR_SIZE) {
		rc = rmq_ctrl_decode_hdr(b, &kind, &body_len);
		ck_assert_msg(rc <= 0, "rmq_ctrl_decode_hdr: %d", rc);
		if (rc == 0)
			ck_assert_uint_le(body_len, RMQ_CTRL_BODY_MAX);
	}
	rc = rmq_ctrl_decode_hello(&hello, b, len);
	ck_assert_msg(rc <= 0, "rmq_ctrl_decode_hello: %d", rc);
	if (rc == 0) {
		ck_assert_uint_le(hello.addr_len, RMQ_ADDR_MAX);
		ck_assert_ptr_nonnull(
		    memchr(hello.prov, '\0', sizeof hello.prov));
	}
	rc = rmq_ctrl_decode_reject(&rej, b, len);
	ck_assert_msg(rc <= 0, "rmq_ctrl_decode_reject: %d", rc);
	if (rc == 0)
		ck_assert_ptr_nonnull(
		    memchr(rej.reason, '\0', sizeof rej.reason));
	rc = rmq_ctrl_decode_bye(&sent, &took, b, len);
	ck_assert_msg(rc <= 0, "rmq_ctrl_decode_bye: %d", rc);
}

/* Random bytes of random length (0 to FUZZ_MAXLEN). */
START_TEST(test_fuzz_random_bytes)
{
	uint8_t *buf;
	uint32_t state = 20240611u;
	size_t   len, i;
	int      n;

	for (n = 0; n < FUZZ_ITER; n++) {
		len = lcg(&state) % (FUZZ_MAXLEN + 1);
		buf = malloc(len > 0 ? len : 1);
		ck_assert_ptr_nonnull(buf);
		for (i = 0; i < len; i++)
			buf[i] = (uint8_t) lcg(&state);
		/* A quarter start like a fabric header: version 1. */
		if (len > 0 && n % 4 == 0)
			buf[0] = RMQ_WIRE_VERSION;
		fuzz_one(buf, len);
		free(buf);
	}
}
END_TEST

/*
 * A valid HELLO body with a few bytes changed and its length moved by up
 * to two bytes: these get past the first checks into the deeper ones.
 */
START_TEST(test_fuzz_mutated_hello)
{
	uint8_t  valid[RMQ_CTRL_BODY_MAX];
	uint8_t *buf;
	uint32_t state = 7u;
	size_t   vlen, len, i, nmut;
	int      n;

	vlen = hello_body(valid, "tcp;ofi_rxm", 16);
	for (n = 0; n < FUZZ_MUT; n++) {
		len = vlen - 2 + lcg(&state) % 5;
		buf = malloc(len);
		ck_assert_ptr_nonnull(buf);
		memset(buf, 0, len);
		memcpy(buf, valid, len < vlen ? len : vlen);
		nmut = 1 + lcg(&state) % 3;
		for (i = 0; i < nmut; i++)
			buf[lcg(&state) % len] = (uint8_t) lcg(&state);
		fuzz_one(buf, len);
		free(buf);
	}
}
END_TEST


/* ---- rmq_copy: a message's bytes, whatever the two buffers' phase ---- */

START_TEST(test_copy_phases)
{
	static const size_t sizes[] = {0, 1, 63, 64, 65, 2047, 2048, 2049,
	                               4096, 4111, 65536, 70001};
	static const size_t gaps[] = {0, 1, 8, 16, 24, 31, 32, 100, 4080};
	static const size_t srcs[] = {0, 16, 4095};
	const size_t        room = 4 * 4096 + 70001 + 4096;
	uint8_t            *a, *b, *src, *dst, *guard = malloc(room);
	size_t              si, gi, oi, i, n;

	ck_assert_ptr_nonnull(guard);
	memset(guard, 0xee, room);
	ck_assert_int_eq(posix_memalign((void **) &a, 4096, room), 0);
	ck_assert_int_eq(posix_memalign((void **) &b, 4096, room), 0);
	for (i = 0; i < room; i++)
		a[i] = (uint8_t) (i * 131 + 7);
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
		for (gi = 0; gi < sizeof(gaps) / sizeof(gaps[0]); gi++)
			for (oi = 0; oi < sizeof(srcs) / sizeof(srcs[0]); oi++) {
				n   = sizes[si];
				src = a + srcs[oi];
				/* dst - src == gap modulo 4096, a guard page
				 * before it */
				dst = b + 4096 + ((srcs[oi] + gaps[gi]) & 4095);
				memset(b, 0xee, room);
				rmq_copy(dst, src, n);
				ck_assert_msg(memcmp(dst, src, n) == 0,
				              "%zu bytes, gap %zu, src at %zu",
				              n, gaps[gi], srcs[oi]);
				i = (size_t) (dst - b);
				ck_assert(memcmp(b, guard, i) == 0);
				ck_assert(memcmp(dst + n, guard,
				                 room - i - n) == 0);
			}
	free(a);
	free(b);
	free(guard);
}
END_TEST

/* It goes backwards exactly where glibc's forward copy stalls. */
START_TEST(test_copy_aliases)
{
	static uint8_t buf[3 * 4096 + 1024 * 1024] __attribute__((aligned(4096)));
	uint8_t       *page = buf, *next = buf + 4096;

	ck_assert(rmq_copy_aliases(next + 16, page, 65536));
	ck_assert(rmq_copy_aliases(next + 16 + 8, page + 16, 4096));
	ck_assert(rmq_copy_aliases(next + 1, page, RMQ_COPY_ALIAS_MIN));
	ck_assert(!rmq_copy_aliases(next + 16, page, RMQ_COPY_ALIAS_MIN - 1));
	ck_assert(!rmq_copy_aliases(next + 16, page, RMQ_COPY_ALIAS_MAX));
	ck_assert(!rmq_copy_aliases(next, page, 65536));
	ck_assert(!rmq_copy_aliases(next + RMQ_COPY_ALIAS_GAP, page, 65536));
	ck_assert(!rmq_copy_aliases(page, next + 16, 65536));
}
END_TEST

static Suite *
wire_suite(void)
{
	Suite *s  = suite_create("wire");
	TCase *tc = tcase_create("wire");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_hdr_round_trip_data);
	tcase_add_test(tc, test_batch_header);
	tcase_add_test(tc, test_rbatch_header);
	tcase_add_test(tc, test_batch_check);
	tcase_add_test(tc, test_hdr_round_trip_data_inject);
	tcase_add_test(tc, test_hdr_round_trip_rts);
	tcase_add_test(tc, test_hdr_round_trip_fin);
	tcase_add_test(tc, test_hdr_round_trip_credit);
	tcase_add_test(tc, test_hdr_round_trip_cts);
	tcase_add_test(tc, test_hdr_layout_little_endian);
	tcase_add_test(tc, test_hdr_decode_short_buffer);
	tcase_add_test(tc, test_hdr_decode_wrong_version);
	tcase_add_test(tc, test_hdr_decode_unknown_type);
	tcase_add_test(tc, test_hdr_decode_data_len_mismatch);
	tcase_add_test(tc, test_hdr_decode_rts_wrong_length);
	tcase_add_test(tc, test_hdr_decode_rts_inject_flag);
	tcase_add_test(tc, test_hdr_decode_fin_with_payload);
	tcase_add_test(tc, test_hdr_decode_credit_with_payload);
	tcase_add_test(tc, test_hdr_decode_cts_with_payload);
	tcase_add_test(tc, test_rts_round_trip);
	tcase_add_test(tc, test_rts_round_trip_send_flag);
	tcase_add_test(tc, test_rts_decode_unknown_flags);
	tcase_add_test(tc, test_help_header);
	tcase_add_test(tc, test_rts_layout_little_endian);
	tcase_add_test(tc, test_ctrl_hello_round_trip);
	tcase_add_test(tc, test_ctrl_hello_round_trip_small_addr);
	tcase_add_test(tc, test_ctrl_hello_ring_round_trip);
	tcase_add_test(tc, test_ctrl_hello_local_round_trip);
	tcase_add_test(tc, test_imm_encoding);
	tcase_add_test(tc, test_seg_header);
	tcase_add_test(tc, test_ctrl_hello_long_provname_truncated);
	tcase_add_test(tc, test_ctrl_reject_round_trip);
	tcase_add_test(tc, test_ctrl_reject_empty_reason);
	tcase_add_test(tc, test_ctrl_reject_encode_truncates_reason);
	tcase_add_test(tc, test_ctrl_reject_decode_truncates_reason);
	tcase_add_test(tc, test_ctrl_decode_reject_short);
	tcase_add_test(tc, test_ctrl_bye_round_trip);
	tcase_add_test(tc, test_ctrl_bye_took_round_trip);
	tcase_add_test(tc, test_ctrl_decode_bye_wrong_length);
	tcase_add_test(tc, test_ctrl_bye_ack);
	tcase_add_test(tc, test_ctrl_hdr_layout);
	tcase_add_test(tc, test_ctrl_decode_hdr_bad_magic);
	tcase_add_test(tc, test_ctrl_decode_hdr_wrong_version);
	tcase_add_test(tc, test_ctrl_decode_hdr_oversized_body);
	tcase_add_test(tc, test_ctrl_decode_hdr_unknown_kind);
	tcase_add_test(tc, test_ctrl_hello_layout);
	tcase_add_test(tc, test_ctrl_decode_hello_empty_provname);
	tcase_add_test(tc, test_ctrl_decode_hello_provname_embedded_nul);
	tcase_add_test(tc, test_ctrl_decode_hello_provname_too_long);
	tcase_add_test(tc, test_ctrl_decode_hello_addr_len_zero);
	tcase_add_test(tc, test_ctrl_decode_hello_addr_len_over_max);
	tcase_add_test(tc, test_ctrl_decode_hello_addr_len_mismatch);
	tcase_add_test(tc, test_ctrl_decode_hello_rcvhwm_zero);
	tcase_add_test(tc, test_ctrl_decode_hello_truncated);
	tcase_add_test(tc, test_fuzz_random_bytes);
	tcase_add_test(tc, test_fuzz_mutated_hello);
	tcase_add_test(tc, test_copy_phases);
	tcase_add_test(tc, test_copy_aliases);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(wire_suite)
