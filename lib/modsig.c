/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

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
	*ret = (struct modsig_info){ .body_len = file_len };
	if (file_len < MODSIG_MAGIC_LEN || tail_len < MODSIG_MAGIC_LEN)
		return 0;
	if (memcmp(tail + tail_len - MODSIG_MAGIC_LEN, MODSIG_MAGIC,
		   MODSIG_MAGIC_LEN) != 0)
		return 0;

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

	ret->body_len = file_len - MODSIG_TRAILER_LEN - sig_len;
	ret->sig_off = ret->body_len;
	ret->sig_len = sig_len;
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
