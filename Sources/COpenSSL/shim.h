#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/sha.h>
#include <openssl/objects.h>
#include <openssl/asn1.h>
#include <openssl/rand.h>
#include <openssl/pkcs7.h>

/* Macros and stack helpers that Swift cannot import directly. */
static inline void copenssl_free(void *p) { OPENSSL_free(p); }

static inline STACK_OF(X509) *copenssl_x509_stack_new(void) { return sk_X509_new_null(); }
static inline int copenssl_x509_stack_push(STACK_OF(X509) *s, X509 *x) { return sk_X509_push(s, x); }
static inline void copenssl_x509_stack_free(STACK_OF(X509) *s) { sk_X509_free(s); }
static inline void copenssl_x509_stack_pop_free(STACK_OF(X509) *s) { sk_X509_pop_free(s, X509_free); }

static inline int copenssl_x509_stack_num(const STACK_OF(X509) *s) { return sk_X509_num(s); }
static inline X509 *copenssl_x509_stack_value(const STACK_OF(X509) *s, int i) { return sk_X509_value(s, i); }

static inline long copenssl_bio_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }

static inline int copenssl_x509_extension_count(X509 *x) { return X509_get_ext_count(x); }

/* The one reader of OpenSSL's error queue as text (the signer, the API client's TLS and
   the test PKI use it): empties the calling thread's queue and writes its entries, oldest
   first, joined by "; ", into `out` (NUL-terminated, cut to `capacity`), or
   "no detail from OpenSSL" when the queue was empty. Returns how many entries there were. */
static inline int copenssl_error_drain(char *out, size_t capacity) {
    size_t used = 0;
    int count = 0;
    unsigned long code;
    if (capacity > 0) out[0] = 0;
    while ((code = ERR_get_error()) != 0) {
        char entry[256];
        ERR_error_string_n(code, entry, sizeof entry);
        const char *parts[2] = { count > 0 ? "; " : "", entry };
        for (int p = 0; p < 2; p++) {
            for (const char *c = parts[p]; *c && used + 1 < capacity; c++) out[used++] = *c;
        }
        if (capacity > 0) out[used] = 0;
        count++;
    }
    if (count == 0) {
        const char *none = "no detail from OpenSSL";
        for (const char *c = none; *c && used + 1 < capacity; c++) out[used++] = *c;
        if (capacity > 0) out[used] = 0;
    }
    return count;
}

/* SHA-256 with its state in a plain struct the caller owns: a state after a prefix
   can be copied and continued (the same block functions EVP uses, SHA-NI included,
   without EVP's context allocation per digest). Deprecated in OpenSSL 3 in favour of
   EVP, which offers no copyable state without an allocation. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline int copenssl_sha256_init(SHA256_CTX *c) { return SHA256_Init(c); }
static inline int copenssl_sha256_update(SHA256_CTX *c, const void *data, size_t count) { return SHA256_Update(c, data, count); }
static inline int copenssl_sha256_final(unsigned char *digest, SHA256_CTX *c) { return SHA256_Final(digest, c); }
#pragma clang diagnostic pop

/* P-256 verification with a key's multiples precomputed (P256FixedBase): the table is
   built by EC_GROUP_precompute_mult for a group whose generator is the key, and the
   result is compared in Jacobian coordinates (no field inversion). Both functions are
   deprecated in OpenSSL 3 without a replacement: EVP offers neither. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline int copenssl_ec_group_precompute_mult(EC_GROUP *group, BN_CTX *ctx) { return EC_GROUP_precompute_mult(group, ctx); }
static inline int copenssl_ec_point_get_jacobian(const EC_GROUP *group, const EC_POINT *point, BIGNUM *x, BIGNUM *y, BIGNUM *z, BN_CTX *ctx) {
    return EC_POINT_get_Jprojective_coordinates_GFp(group, point, x, y, z, ctx);
}
#pragma clang diagnostic pop
/* PKCS#7 app receipts: the macros and union members of SignedData that Swift cannot reach. */
static inline int copenssl_pkcs7_is_signed(PKCS7 *p7) { return p7 != NULL && PKCS7_type_is_signed(p7); }
/* The signed content's bytes (the SignedData's embedded data), or NULL when there is none. */
static inline const unsigned char *copenssl_pkcs7_signed_content(PKCS7 *p7, int *length) {
    if (!copenssl_pkcs7_is_signed(p7) || p7->d.sign == NULL) return NULL;
    PKCS7 *inner = p7->d.sign->contents;
    if (inner == NULL || !PKCS7_type_is_data(inner) || inner->d.data == NULL) return NULL;
    *length = ASN1_STRING_length(inner->d.data);
    return ASN1_STRING_get0_data(inner->d.data);
}
/* The certificates the SignedData carries (borrowed), or NULL. */
static inline STACK_OF(X509) *copenssl_pkcs7_certificates(PKCS7 *p7) {
    if (!copenssl_pkcs7_is_signed(p7) || p7->d.sign == NULL) return NULL;
    return p7->d.sign->cert;
}
static inline int copenssl_pkcs7_signer_count(PKCS7 *p7) {
    STACK_OF(PKCS7_SIGNER_INFO) *infos = PKCS7_get_signer_info(p7);
    return infos == NULL ? 0 : sk_PKCS7_SIGNER_INFO_num(infos);
}
#endif
