# Reference values for docsync's key tests, computed apart from docsync's Swift code:
# Python's blake3 package, cryptography (Argon2id, AES-GCM, ChaCha20-Poly1305) and HChaCha20
# by hand. Run: python3 Tools/key-vectors.py
import blake3, struct
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

def derive(ctx, material): return blake3.blake3(material, derive_key_context=ctx).digest()
ctxs = {
 "objectIDs": "docsync 2026-11-29 epoch key: object ids",
 "boundaries": "docsync 2026-11-29 epoch key: chunk boundaries",
 "objectSealing": "docsync 2026-11-29 epoch key: object sealing",
 "recordSealing": "docsync 2026-11-29 epoch key: record sealing",
 "recordIDs": "docsync 2026-11-29 epoch key: record ids",
 "epochWrapping": "docsync 2026-11-29 master key: epoch key wrapping",
 "envelopeSigning": "docsync 2026-11-29 master key: envelope signing",
 "recoveryWrapping": "docsync 2026-11-29 recovery key: master key wrapping",
}
k = bytes(range(32))
for n, c in ctxs.items(): print(n, derive(c, k).hex())
# chunk id of "hello" under epoch key range(32): ObjectHasher derives per kind from idKey
idkey = derive(ctxs["objectIDs"], k)
chunkkey = derive("docsync 2026-11-29 object id: chunk", idkey)
print("hello chunk id", blake3.blake3(b"hello", key=chunkkey).hexdigest())
print("record id", blake3.blake3(b"a record's canonical encoding", key=derive(ctxs["recordIDs"], k)).hexdigest())

import math
def padme(L):
    if L < 2: return L
    E = L.bit_length() - 1; S = E.bit_length(); mask = (1 << (E - S)) - 1
    return (L + mask) & ~mask
print("padme", [(L, padme(L)) for L in [0,1,2,3,7,8,9,100,129,1000,65537,65536+1000,262145,1<<20|12345]])

a = Argon2id(salt=bytes(range(16)), length=32, iterations=1, lanes=1, memory_cost=8)
print("argon2id", a.derive(b"correct horse battery staple").hex())

def rotl(v, c): return ((v << c) & 0xffffffff) | (v >> (32 - c))
def qr(s, a, b, c, d):
    s[a]=(s[a]+s[b])&0xffffffff; s[d]^=s[a]; s[d]=rotl(s[d],16)
    s[c]=(s[c]+s[d])&0xffffffff; s[b]^=s[c]; s[b]=rotl(s[b],12)
    s[a]=(s[a]+s[b])&0xffffffff; s[d]^=s[a]; s[d]=rotl(s[d],8)
    s[c]=(s[c]+s[d])&0xffffffff; s[b]^=s[c]; s[b]=rotl(s[b],7)
def hchacha(key, n16):
    s = [0x61707865,0x3320646e,0x79622d32,0x6b206574] + list(struct.unpack("<8I", key)) + list(struct.unpack("<4I", n16))
    for _ in range(10):
        qr(s,0,4,8,12); qr(s,1,5,9,13); qr(s,2,6,10,14); qr(s,3,7,11,15)
        qr(s,0,5,10,15); qr(s,1,6,11,12); qr(s,2,7,8,13); qr(s,3,4,9,14)
    return struct.pack("<8I", *(s[0:4] + s[12:16]))
def xseal(key, nonce, msg, aad):
    """XChaCha20-Poly1305, as the key envelope's wraps use it."""
    return ChaCha20Poly1305(hchacha(key, nonce[:16])).encrypt(b"\0\0\0\0" + nonce[16:], msg, aad)
def seal(key, nonce, msg, aad):
    """SealingCipher: AES-256-GCM under BLAKE3-keyed(key, nonce[:12]), GCM nonce nonce[12:]."""
    return AESGCM(blake3.blake3(nonce[:12], key=key).digest()).encrypt(nonce[12:], msg, aad)

# sealed object: epoch 1 key range(32), id 0x11*32, chunk, nonce range(24), frame raw "hello"
sealkey = derive(ctxs["objectSealing"], k)
nonce = bytes(range(24)); oid = b"\x11" * 32
frame = b"\x00hello"; msg = frame + b"\x80" + b"\0" * (padme(len(frame) + 1) - len(frame) - 1)
aad = b"docsync object" + b"\x80" + struct.pack("<I", 1) + b"\x01" + oid
print("sealed object", (b"\x80" + struct.pack("<I", 1) + nonce + seal(sealkey, nonce, msg, aad)).hex())
# sealed record: record 0x22*32, parents 0x44*32 and 0x33*32 (sorted in the binding)
reckey = derive(ctxs["recordSealing"], k)
fields = b"notes/plan.md"
L = padme(len(fields) + 1); L = (L + 63) // 64 * 64
msg = fields + b"\x80" + b"\0" * (L - len(fields) - 1)
aad = b"docsync record" + b"\x01" + struct.pack("<I", 1) + b"\x22" * 32 + struct.pack("<I", 2) + b"\x33" * 32 + b"\x44" * 32
print("sealed record", (b"\x01" + struct.pack("<I", 1) + nonce + seal(reckey, nonce, msg, aad)).hex())
# a key wrap: key 0x55…, under 0…31, binding "docsync test", nonce 0…23
print("wrapped key", (nonce + xseal(k, nonce, b"\x55" * 32, b"docsync test")).hex())

# recovery key text for bytes range(20)
A = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
def mul(a, b):
    p = 0
    while b:
        if b & 1: p ^= a
        b >>= 1; a <<= 1
        if a & 32: a ^= 0b100101
    return p
v = int.from_bytes(bytes(range(20)), "big"); sym = [(v >> (5 * (31 - i))) & 31 for i in range(32)]
groups = []
for g in range(8):
    d = sym[4*g:4*g+4]; c = g + 1; w = 2
    for x in d: c ^= mul(w, x); w = mul(w, 2)
    groups.append("".join(A[x] for x in d + [c]))
print("recovery", "-".join(groups))
