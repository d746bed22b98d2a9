# CPython's own SHA-256 module up to 3.11 (3.12 calls it _sha2): load/parsecache.py uses it
# to start without OpenSSL
from _hashlib import HASH
from _typeshed import ReadableBuffer

def sha256(string: ReadableBuffer = b"", *, usedforsecurity: bool = True) -> HASH: ...
