/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The end (and the start) of a module file, as modsign-client reads them.
 * Input: 4 bytes of extra length (the file is that much longer than what
 * we see: the tail of a big module), then the bytes.  The parser must
 * never claim a signature outside the file, and a trailer it accepts must
 * be exactly the one modsig_trailer() writes.
 */
#include <errno.h>

#include "fuzz.h"
#include "modsig.h"

static void check_tail(const uint8_t *tail, size_t tail_len, size_t file_len)
{
	struct modsig_info info;
	uint8_t trailer[MODSIG_TRAILER_LEN];
	int r;

	r = modsig_parse(tail, tail_len, file_len, &info);
	FUZZ_ASSERT(r == 0 || r == 1 || r == -EBADMSG || r == -ENOPKG ||
		    r == -EINVAL);
	if (r == 0) {
		FUZZ_ASSERT(info.body_len == file_len && info.sig_len == 0);
		return;
	}
	if (r < 0)
		return;
	FUZZ_ASSERT(info.sig_len > 0);
	FUZZ_ASSERT(info.body_len == info.sig_off);
	FUZZ_ASSERT(info.sig_off + info.sig_len + MODSIG_TRAILER_LEN == file_len);
	FUZZ_ASSERT(info.sig_off < file_len);
	if (info.sig_len <= MODSIG_MAX_SIG) {
		FUZZ_ASSERT(modsig_trailer(info.sig_len, trailer) == 0);
		FUZZ_ASSERT(memcmp(trailer, tail + tail_len - MODSIG_TRAILER_LEN,
				   MODSIG_TRAILER_LEN) == 0);
	} else {
		FUZZ_ASSERT(modsig_trailer(info.sig_len, trailer) == -ERANGE);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t extra;
	uint64_t end;
	size_t n;

	fuzz_canary(data, size);
	if (size < sizeof(extra))
		return 0;
	memcpy(&extra, data, sizeof(extra));
	data += sizeof(extra);
	size -= sizeof(extra);

	/* As modfile_open(): the last MODSIG_TRAILER_LEN bytes at most... */
	n = size < MODSIG_TRAILER_LEN ? size : MODSIG_TRAILER_LEN;
	check_tail(data + size - n, n, size);
	check_tail(data + size - n, n, size + extra);
	/* ...and any other length a caller might pass. */
	check_tail(data, size, size + (extra & 0xffff));
	/* A tail longer than the file is refused, not read. */
	if (size > 0)
		FUZZ_ASSERT(modsig_parse(data, size, size - 1,
					 &(struct modsig_info){ 0 }) == -EINVAL);

	/* The same bytes as the head of the file. */
	n = size < MODSIG_ELF_HDR_LEN ? size : MODSIG_ELF_HDR_LEN;
	if (modsig_elf_end(data, n, &end) == 0)
		FUZZ_ASSERT(n >= 52 && memcmp(data, "\177ELF", 4) == 0);
	return 0;
}
