/*
 * fuzz_ctrl: the control channel as a peer writes it (lib/wire.c).
 *
 * Input: a byte stream of control frames, "RMQC" | u8 version | u8 kind |
 * u16 body length | body, as the TCP/Unix control connection delivers
 * them (conn/ctrl.c, conn/dial.c).  Each frame header goes through
 * rmq_ctrl_decode_hdr; the walk stops where the channel would drop the
 * connection (bad header) or wait for more bytes (short body).  Each body
 * goes, in an exact-size heap copy (so ASan sees any read past it), to the
 * decoder of its kind: rmq_ctrl_decode_hello, _reject, _bye.  Every frame
 * accepted is encoded again with rmq_ctrl_encode_* and decoded again:
 *
 *   HELLO, BYE, BYE_ACK, PAT   the encoding is canonical: the same bytes
 *                              as the input frame, and the same struct
 *   REJECT                     the same code and reason text (the reason
 *                              is cut at its first NUL and at 199 bytes)
 */
#include <string.h>

#include "rmq.h"
#include "wire.h"

#include "fuzz.h"

#define FRAME_MAX (RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX)

/* The re-encoded frame must carry the same header as the input's. */
static void
check_frame(const uint8_t *out, size_t n, int kind, size_t body_len)
{
	int    k2;
	size_t b2;

	FUZZ_CHECK(n == RMQ_CTRL_HDR_SIZE + body_len,
	           "kind %d: encoded %zu bytes, body was %zu", kind, n,
	           body_len);
	FUZZ_CHECK(rmq_ctrl_decode_hdr(out, &k2, &b2) == 0,
	           "kind %d: our own frame header is refused", kind);
	FUZZ_CHECK(k2 == kind && b2 == body_len,
	           "kind %d/%d body %zu/%zu after re-encoding", kind, k2,
	           body_len, b2);
}

static void
hello(const uint8_t *frame, const uint8_t *body, size_t len)
{
	struct rmq_hello h, h2;
	uint8_t          out[FRAME_MAX];
	size_t           n, pl;
	int              rc;

	rc = rmq_ctrl_decode_hello(&h, body, len);
	FUZZ_CHECK(rc == 0 || rc == -RMQ_EPROTO, "decode_hello returned %d",
	           rc);
	if (rc != 0)
		return;
	/* What the handshake relies on (hello.c, paths/ring.c). */
	pl = strnlen(h.prov, sizeof h.prov);
	FUZZ_CHECK(pl > 0 && pl < sizeof h.prov, "provider name of %zu", pl);
	FUZZ_CHECK(h.addr_len > 0 && h.addr_len <= RMQ_ADDR_MAX,
	           "address of %u bytes", h.addr_len);
	FUZZ_CHECK((h.features & ~RMQ_FEAT_KNOWN) == 0, "features %#x",
	           h.features);
	FUZZ_CHECK(h.rcvhwm != 0, "rcvhwm 0 accepted");
	if (h.features & RMQ_FEAT_RING)
		FUZZ_CHECK(h.ring_slots >= 4 &&
		               h.ring_slots <= RMQ_RING_SLOTS_MAX &&
		               h.ring_slot_size >= 64 &&
		               h.ring_slot_size <= (1u << 20),
		           "ring of %u x %u", h.ring_slots, h.ring_slot_size);
	else
		FUZZ_CHECK(h.ring_addr == 0 && h.ring_key == 0 &&
		               h.ring_slots == 0 && h.ring_slot_size == 0,
		           "ring fields set without RMQ_FEAT_RING");

	memset(out, 0xa5, sizeof out);
	n = rmq_ctrl_encode_hello(out, &h);
	check_frame(out, n, RMQ_CK_HELLO, len);
	FUZZ_CHECK(memcmp(out, frame, n) == 0,
	           "HELLO re-encoded to other bytes");
	rc = rmq_ctrl_decode_hello(&h2, out + RMQ_CTRL_HDR_SIZE, len);
	FUZZ_CHECK(rc == 0, "re-encoded HELLO refused: %d", rc);
	FUZZ_CHECK(memcmp(&h, &h2, sizeof h) == 0,
	           "HELLO decodes differently after re-encoding");
}

static void
reject(const uint8_t *body, size_t len)
{
	struct rmq_reject r, r2;
	uint8_t           out[FRAME_MAX];
	size_t            n, rl, want;
	int               rc;

	rc = rmq_ctrl_decode_reject(&r, body, len);
	FUZZ_CHECK(rc == 0 || rc == -RMQ_EPROTO, "decode_reject returned %d",
	           rc);
	FUZZ_CHECK((rc == 0) == (len >= 4), "REJECT of %zu bytes: %d", len,
	           rc);
	if (rc != 0)
		return;
	FUZZ_CHECK(r.code == rmq_get32(body), "code %u", r.code);
	rl = strnlen(r.reason, sizeof r.reason);
	FUZZ_CHECK(rl < sizeof r.reason, "reason not NUL-terminated");
	/* The text up to its first NUL, at most 199 bytes. */
	want = strnlen((const char *) body + 4, len - 4);
	if (want > sizeof r.reason - 1)
		want = sizeof r.reason - 1;
	FUZZ_CHECK(rl == want && memcmp(r.reason, body + 4, rl) == 0,
	           "reason of %zu bytes, want %zu", rl, want);

	memset(out, 0xa5, sizeof out);
	n = rmq_ctrl_encode_reject(out, &r);
	check_frame(out, n, RMQ_CK_REJECT, 4 + rl);
	rc = rmq_ctrl_decode_reject(&r2, out + RMQ_CTRL_HDR_SIZE,
	                            n - RMQ_CTRL_HDR_SIZE);
	FUZZ_CHECK(rc == 0, "re-encoded REJECT refused: %d", rc);
	FUZZ_CHECK(r2.code == r.code && strcmp(r2.reason, r.reason) == 0,
	           "REJECT decodes differently after re-encoding");
}

static void
bye(const uint8_t *frame, const uint8_t *body, size_t len)
{
	uint64_t sent = 0, sent2 = 0, took = 0, took2 = 0;
	uint8_t  out[FRAME_MAX];
	size_t   n;
	int      rc;

	rc = rmq_ctrl_decode_bye(&sent, &took, body, len);
	FUZZ_CHECK((rc == 0) == (len == 8 || len == 16),
	           "BYE of %zu bytes: %d", len, rc);
	if (rc != 0) {
		FUZZ_CHECK(rc == -RMQ_EPROTO, "decode_bye returned %d", rc);
		return;
	}
	/* A 16-byte BYE whose took is RMQ_BYE_NO_TOOK reads as one
	 * without: it re-encodes in 8. */
	n = rmq_ctrl_encode_bye(out, sent, took);
	check_frame(out, n, RMQ_CK_BYE, took == RMQ_BYE_NO_TOOK ? 8 : 16);
	FUZZ_CHECK(n != RMQ_CTRL_HDR_SIZE + len || memcmp(out, frame, n) == 0,
	           "BYE re-encoded differently");
	rc = rmq_ctrl_decode_bye(&sent2, &took2, out + RMQ_CTRL_HDR_SIZE,
	                         n - RMQ_CTRL_HDR_SIZE);
	FUZZ_CHECK(rc == 0 && sent2 == sent && took2 == took,
	           "BYE round trip %llu/%llu", (unsigned long long) sent,
	           (unsigned long long) sent2);
}

static void
frame_one(const uint8_t *frame, int kind, size_t body_len)
{
	uint8_t  out[FRAME_MAX];
	uint8_t *body = dup_exact(frame + RMQ_CTRL_HDR_SIZE, body_len);
	size_t   n;
	int      rc;

	switch (kind) {
	case RMQ_CK_HELLO:
		hello(frame, body, body_len);
		break;
	case RMQ_CK_REJECT:
		reject(body, body_len);
		break;
	case RMQ_CK_BYE:
		bye(frame, body, body_len);
		break;
	case RMQ_CK_BYE_ACK:
		/* No decoder: the channel takes the kind alone. */
		if (body_len == 0) {
			n = rmq_ctrl_encode_bye_ack(out);
			check_frame(out, n, RMQ_CK_BYE_ACK, 0);
			FUZZ_CHECK(memcmp(out, frame, n) == 0,
			           "BYE_ACK re-encoded differently");
		}
		break;
	case RMQ_CK_PAT:
		/* The pattern's own body: carried as it is. */
		n = rmq_ctrl_encode_pat(out, body, body_len);
		check_frame(out, n, RMQ_CK_PAT, body_len);
		FUZZ_CHECK(memcmp(out, frame, n) == 0,
		           "PAT re-encoded differently");
		break;
	case RMQ_CK_AUTH: {
		uint8_t nonce[RMQ_AUTH_NONCE], mac[RMQ_AUTH_MAC];

		rc = rmq_ctrl_decode_auth(nonce, mac, body, body_len);
		FUZZ_CHECK(rc == 0 || rc == -RMQ_EPROTO,
		           "decode_auth returned %d", rc);
		FUZZ_CHECK((rc == 0) ==
		               (body_len == RMQ_AUTH_NONCE + RMQ_AUTH_MAC),
		           "decode_auth took a body of %zu", body_len);
		if (rc == 0) {
			n = rmq_ctrl_encode_auth(out, nonce, mac);
			check_frame(out, n, RMQ_CK_AUTH, body_len);
			FUZZ_CHECK(memcmp(out, frame, n) == 0,
			           "AUTH re-encoded differently");
		}
		break;
	}
	default:
		FUZZ_CHECK(0, "decode_hdr accepted kind %d", kind);
	}
	free(body);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t   off = 0, body_len;
	uint8_t *hdr;
	int      kind, rc;

	while (size - off >= RMQ_CTRL_HDR_SIZE) {
		hdr = dup_exact(data + off, RMQ_CTRL_HDR_SIZE);
		kind     = -1;
		body_len = (size_t) -1;
		rc       = rmq_ctrl_decode_hdr(hdr, &kind, &body_len);
		free(hdr);
		FUZZ_CHECK(rc == 0 || rc == -RMQ_EPROTO || rc == -RMQ_EVERSION,
		           "decode_hdr returned %d", rc);
		if (rc != 0)
			break; /* the channel drops the connection */
		FUZZ_CHECK(kind >= RMQ_CK_HELLO && kind <= RMQ_CK_AUTH &&
		               body_len <= RMQ_CTRL_BODY_MAX,
		           "accepted kind %d, body %zu", kind, body_len);
		if (size - off - RMQ_CTRL_HDR_SIZE < body_len)
			break; /* the channel waits for the rest */
		frame_one(data + off, kind, body_len);
		off += RMQ_CTRL_HDR_SIZE + body_len;
	}
	return 0;
}
