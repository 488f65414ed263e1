/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <endian.h>

#include "modsig.h"

_Static_assert(sizeof(struct module_signature) == 12, "kernel ABI");

int modsig_parse(const uint8_t *tail, size_t tail_len, size_t file_len,
		 struct modsig_info *ret)
{
	struct module_signature ms;
	const uint8_t *p;
	size_t sig_len;

	if (tail_len > file_len)
		return -EINVAL;
	if (file_len < MODSIG_MAGIC_LEN || tail_len < MODSIG_MAGIC_LEN ||
	    memcmp(tail + tail_len - MODSIG_MAGIC_LEN, MODSIG_MAGIC,
		   MODSIG_MAGIC_LEN) != 0) {
		*ret = (struct modsig_info){ .body_len = file_len };
		return 0;
	}

	/* From here on the file claims to be signed: any defect is corruption. */
	if (file_len < MODSIG_TRAILER_LEN || tail_len < MODSIG_TRAILER_LEN)
		return -EBADMSG;
	p = tail + tail_len - MODSIG_TRAILER_LEN;
	memcpy(&ms, p, sizeof(ms));
	sig_len = ntohl(ms.sig_len);

	/* The kernel's mod_check_sig(), with the subtraction made safe. */
	if (sig_len == 0 || sig_len >= file_len - MODSIG_TRAILER_LEN)
		return -EBADMSG;
	if (ms.id_type != MODSIG_PKEY_ID_PKCS7)
		return -ENOPKG;
	if (ms.algo || ms.hash || ms.signer_len || ms.key_id_len || ms.pad[0] ||
	    ms.pad[1] || ms.pad[2])
		return -EBADMSG;

	*ret = (struct modsig_info){
		.body_len = file_len - MODSIG_TRAILER_LEN - sig_len,
		.sig_off = file_len - MODSIG_TRAILER_LEN - sig_len,
		.sig_len = sig_len,
	};
	return 1;
}

int modsig_trailer(size_t sig_len, uint8_t out[MODSIG_TRAILER_LEN])
{
	struct module_signature ms = { .id_type = MODSIG_PKEY_ID_PKCS7 };

	if (sig_len == 0 || sig_len > MODSIG_MAX_SIG)
		return -ERANGE;
	ms.sig_len = htonl((uint32_t)sig_len);
	memcpy(out, &ms, sizeof(ms));
	memcpy(out + sizeof(ms), MODSIG_MAGIC, MODSIG_MAGIC_LEN);
	return 0;
}

static uint64_t get(const uint8_t *p, size_t n, int big)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[big ? i : n - 1 - i] << (8 * (n - 1 - i));
	return v;
}

int modsig_elf_end(const uint8_t *hdr, size_t len, uint64_t *ret)
{
	int is64, big;
	uint64_t shoff, shentsize, shnum;

	if (len < 52 || memcmp(hdr, "\177ELF", 4) != 0)
		return -ENOEXEC;
	if (hdr[4] != 1 && hdr[4] != 2)
		return -ENOEXEC;
	if (hdr[5] != 1 && hdr[5] != 2)
		return -ENOEXEC;
	is64 = hdr[4] == 2;
	big = hdr[5] == 2;
	if (is64 && len < MODSIG_ELF_HDR_LEN)
		return -ENOEXEC;
	/* e_shoff, e_shentsize and e_shnum of Elf32_Ehdr / Elf64_Ehdr */
	shoff = is64 ? get(hdr + 0x28, 8, big) : get(hdr + 0x20, 4, big);
	shentsize = get(hdr + (is64 ? 0x3a : 0x2e), 2, big);
	shnum = get(hdr + (is64 ? 0x3c : 0x30), 2, big);
	if (shoff > UINT64_MAX - shentsize * shnum)
		return -ENOEXEC;
	*ret = shoff + shentsize * shnum;
	return 0;
}
