# CPython's own SHA-1 module: expressions/digest.py uses it to start without OpenSSL
from _hashlib import HASH
from _typeshed import ReadableBuffer

def sha1(string: ReadableBuffer = b"", *, usedforsecurity: bool = True) -> HASH: ...
