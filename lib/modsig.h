/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_MODSIG_H
#define MODSIGN_MODSIG_H

/*
 * The kernel module signature trailer (include/linux/module_signature.h):
 *
 *   [ module body | PKCS#7 DER (sig_len bytes) | struct module_signature |
 *     "~Module signature appended~\n" ]
 *
 * Parsing never trusts a length before checking it against the file size.
 */

#include <stddef.h>
#include <stdint.h>

#define MODSIG_MAGIC "~Module signature appended~\n"
#define MODSIG_MAGIC_LEN (sizeof(MODSIG_MAGIC) - 1)
#define MODSIG_PKEY_ID_PKCS7 2

/* Upper bound on a signature we will read or write (the kernel sets none;
 * an RSA-16384 PKCS#7 is under 3 KiB). */
#define MODSIG_MAX_SIG (64u * 1024)

struct module_signature {
	uint8_t algo;       /* 0 */
	uint8_t hash;       /* 0 */
	uint8_t id_type;    /* MODSIG_PKEY_ID_PKCS7 */
	uint8_t signer_len; /* 0 */
	uint8_t key_id_len; /* 0 */
	uint8_t pad[3];     /* 0 */
	uint32_t sig_len;   /* big-endian */
};

#define MODSIG_TRAILER_LEN (sizeof(struct module_signature) + MODSIG_MAGIC_LEN)

struct modsig_info {
	size_t body_len; /* bytes before the signature (whole file if unsigned) */
	size_t sig_off;  /* offset of the PKCS#7 DER; 0 if unsigned */
	size_t sig_len;  /* length of the PKCS#7 DER; 0 if unsigned */
};

/*
 * Inspect the last bytes of a module of @file_len bytes.  @tail holds the
 * final @tail_len bytes of the file (at least MODSIG_TRAILER_LEN of them, or
 * the whole file if it is shorter).
 *
 * Returns 0 with sig_len == 0 if the file carries no signature, 1 if it does
 * and the trailer obeys the kernel's mod_check_sig() rules, -EBADMSG if the
 * magic is present but the trailer is corrupt (bad length or non-zero
 * fields), -ENOPKG if it is not a PKCS#7 signature.
 */
int modsig_parse(const uint8_t *tail, size_t tail_len, size_t file_len,
		 struct modsig_info *ret);

/* Bytes of an ELF header we need to find where the image ends. */
#define MODSIG_ELF_HDR_LEN 64

/*
 * Where the ELF image that starts with @hdr ends: the end of its section
 * header table, which the linker writes last in every module (checked on
 * all 4023 modules of Debian's linux-image-6.1).  A module whose body is
 * longer than that carries a damaged signature; shorter, it is truncated.
 * Returns 0, or -ENOEXEC when @hdr is not an ELF header.
 */
int modsig_elf_end(const uint8_t *hdr, size_t len, uint64_t *ret);

/* Fill @out (MODSIG_TRAILER_LEN bytes) with the trailer for @sig_len. */
int modsig_trailer(size_t sig_len, uint8_t out[MODSIG_TRAILER_LEN]);

#endif
