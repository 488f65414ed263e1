/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/mldsa.c, the external mu of pure ML-DSA (FIPS 204) that the client
 * computes with SHAKE256 alone: a known answer (python's hashlib), the
 * file and buffer forms agreeing, and, where OpenSSL has ML-DSA (3.5),
 * the two ways round: OpenSSL signing the whole message verifies against
 * our mu, and our mu signed verifies over the whole message, each with a
 * tampered twin.  ML-DSA signing is randomised, so they are compared by
 * verifying.  Where OpenSSL has none (3.0), that it says so.
 */
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "mldsa.h"
#include "unit-cert.h"
#include "unit.h"
#include "util.h"

static const char msg[] = "modsign mu";
/* hashlib.shake_256(bytes(range(64)) + b"\0\0" + b"modsign mu").hexdigest(64) */
static const char kat_mu[] =
	"f96b7a82acc05179bd31a138152cb8bd38b957107e8093befb4c12929b659ec9"
	"2459831467a8084085618bf55f2030cc4c40a4f84f7c5dc03a7b58d1963a6fc6";

UNIT_TEST(mu_known_answer)
{
	uint8_t tr[MLDSA_TR_LEN], mu[MLDSA_MU_LEN], fmu[MLDSA_MU_LEN];
	_cleanup_(freep) char *hex = NULL;
	char path[] = "/tmp/test-mldsa-XXXXXX";
	int fd = mkstemp(path);

	for (size_t i = 0; i < sizeof(tr); i++)
		tr[i] = (uint8_t)i;
	CHECK_EQ("mu-buf", mldsa_mu_buf(tr, msg, strlen(msg), mu), 0);
	CHECK("mu-known-answer", hex_encode(mu, sizeof(mu), &hex) == 0 && strcmp(hex, kat_mu) == 0);
	CHECK("mu-fd-tmpfile", fd >= 0 && write(fd, msg, strlen(msg)) == (ssize_t)strlen(msg));
	unlink(path);
	CHECK_EQ("mu-fd", mldsa_mu_fd(tr, fd, strlen(msg), fmu), 0);
	CHECK("mu-fd-equals-buf", memcmp(mu, fmu, sizeof(mu)) == 0);
	CHECK_EQ("mu-fd-shorter-file", mldsa_mu_fd(tr, fd, strlen(msg) + 1, fmu), -ESTALE);
	tr[0] ^= 1; /* twin: another key's tr */
	mldsa_mu_buf(tr, msg, strlen(msg), fmu);
	CHECK("mu-depends-on-tr", memcmp(mu, fmu, sizeof(mu)) != 0);
	close(fd);
}

UNIT_TEST(variants_table)
{
	CHECK("by-name-mldsa44", mldsa_by_name("mldsa44") && mldsa_by_name("mldsa44")->pk_len == 1312);
	CHECK("by-ossl-name", mldsa_by_name("ML-DSA-87") == mldsa_by_name("mldsa87"));
	CHECK("by-name-unknown", !mldsa_by_name("mldsa99") && !mldsa_by_name(NULL));
}

/* One-shot sign (@sign) or verify with ML-DSA, "mu" set or not. */
static bool oneshot(EVP_PKEY *key, bool sign, bool mu, const void *m, size_t mlen,
		    uint8_t *sig, size_t *sig_len)
{
	int one = 1;
	OSSL_PARAM mu_params[] = { OSSL_PARAM_construct_int("mu", &one), OSSL_PARAM_construct_end() };
	OSSL_PARAM *params = mu ? mu_params : NULL;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = ctx &&
		  (sign ? EVP_DigestSignInit_ex(ctx, NULL, NULL, NULL, NULL, key, params) > 0 &&
				  EVP_DigestSign(ctx, sig, sig_len, m, mlen) > 0 :
			  EVP_DigestVerifyInit_ex(ctx, NULL, NULL, NULL, NULL, key, params) > 0 &&
				  EVP_DigestVerify(ctx, sig, *sig_len, m, mlen) == 1);

	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

UNIT_TEST(mu_both_ways)
{
	const struct mldsa_variant *v = mldsa_by_name("mldsa65");
	uint8_t tr[MLDSA_TR_LEN], mu[MLDSA_MU_LEN], other[MLDSA_MU_LEN], sig[5000];
	size_t sig_len = sizeof(sig);
	EVP_PKEY *key;
	X509 *cert;

	if (!mldsa_available(v)) {
		/* OpenSSL 3.0: no ML-DSA, and we say so rather than fail. */
		CHECK("no-mldsa-here", !EVP_PKEY_Q_keygen(NULL, NULL, "ML-DSA-65"));
		ERR_clear_error();
		return;
	}
	key = EVP_PKEY_Q_keygen(NULL, NULL, "ML-DSA-65");
	cert = key ? unit_cert_md(key, key, NULL) : NULL;
	if (!CHECK("mldsa-key-and-cert", cert))
		return;
	CHECK("cert-is-mldsa65", mldsa_of_cert(cert) == v);
	CHECK_EQ("cert-tr", mldsa_cert_tr(cert, tr), 0);
	mldsa_mu_buf(tr, msg, strlen(msg), mu);
	mldsa_mu_buf(tr, "modsign mv", strlen(msg), other);

	/* OpenSSL signs the whole message; our mu verifies it. */
	CHECK("openssl-signs-message", oneshot(key, true, false, msg, strlen(msg), sig, &sig_len));
	CHECK("our-mu-verifies-openssl-signature",
	      oneshot(key, false, true, mu, sizeof(mu), sig, &sig_len));
	CHECK("other-mu-rejects-openssl-signature",
	      !oneshot(key, false, true, other, sizeof(other), sig, &sig_len));

	/* We sign our mu; OpenSSL verifies over the whole message. */
	sig_len = sizeof(sig);
	CHECK("openssl-signs-our-mu", oneshot(key, true, true, mu, sizeof(mu), sig, &sig_len));
	CHECK("openssl-verifies-message", oneshot(key, false, false, msg, strlen(msg), sig, &sig_len));
	CHECK("openssl-rejects-tampered-message",
	      !oneshot(key, false, false, "modsign mv", strlen(msg), sig, &sig_len));
	X509_free(cert);
	EVP_PKEY_free(key);
}

UNIT_MAIN();
