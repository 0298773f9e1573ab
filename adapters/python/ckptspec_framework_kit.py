"""What the framework adapters of ckptspec share (docs/PROTOCOL.md, "Framework adapters"): the
digest of a parameter's elements and the synthetic gradient.
Needs numpy; imported by path beside ckptspec_adapter_kit.

  digest(index, values)    the protocol's digest of elements (row-major indices in the whole
                           parameter, values as fp32 bit patterns), an int modulo 2**64
  hex_digest(d)            its wire form: 16 lowercase hex digits
  synthetic_gradient(seed, iteration, name, index)
                           the gradient of those elements at that iteration, float32, a function
                           of its arguments only (never of the layout or the process)
"""
import numpy as np

MASK = (1 << 64) - 1
_K_INDEX = np.uint64(0x9E3779B97F4A7C15)
_K_BITS = np.uint64(0xC2B2AE3D27D4EB4F)
_K_ADD = np.uint64(0x165667B19E3779F9)
_FMIX1 = np.uint64(0xFF51AFD7ED558CCD)
_FMIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)


def _fmix64(z):
    """MurmurHash3's 64-bit finalizer, elementwise over a uint64 array (wrapping arithmetic)."""
    z = z ^ (z >> _S33)
    z = z * _FMIX1
    z = z ^ (z >> _S33)
    z = z * _FMIX2
    return z ^ (z >> _S33)


def digest(index, bits):
    """The protocol's digest of elements: the sum modulo 2**64 of
    fmix64(i * 0x9E3779B97F4A7C15 + b * 0xC2B2AE3D27D4EB4F + 0x165667B19E3779F9), with `index`
    the elements' row-major indices in the whole parameter and `bits` the 32-bit patterns of their
    values as fp32 (both array-likes of one length). Returns a Python int."""
    i = np.asarray(index, dtype=np.uint64)
    b = np.asarray(bits, dtype=np.uint32).astype(np.uint64)
    if i.shape != b.shape:
        raise ValueError(f"digest: {i.shape} indices for {b.shape} values")
    with np.errstate(over="ignore"):
        terms = _fmix64(i * _K_INDEX + b * _K_BITS + _K_ADD)
        return int(terms.sum(dtype=np.uint64))


def fp32_bits(values):
    """The 32-bit patterns of `values` (a numpy array of any float dtype numpy has) as fp32."""
    return np.ascontiguousarray(np.asarray(values, dtype=np.float32)).view(np.uint32)


def hex_digest(d):
    return f"{d & MASK:016x}"


def add_digests(a, b):
    return (a + b) & MASK


def name_hash(name):
    """FNV-1a, 64 bits, of the UTF-8 name."""
    h = 0xCBF29CE484222325
    for byte in name.encode():
        h = ((h ^ byte) * 0x100000001B3) & MASK
    return h


def synthetic_gradient(seed, iteration, name, index):
    """The gradient of parameter `name`'s elements at `index` (row-major in the whole parameter)
    for training iteration `iteration` (the one being taken, counted from 1): float32 values in
    [-1/128, 1/128), exact multiples of 2**-31, from (seed, iteration, name, index) alone."""
    key = np.uint64((name_hash(name) ^ (seed * 0x9E3779B97F4A7C15) ^
                     (iteration * 0xD6E8FEB86659FD93)) & MASK)
    i = np.asarray(index, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = _fmix64(_fmix64(key ^ (i * _K_INDEX + _K_ADD)))
    top24 = (z >> np.uint64(40)).astype(np.float64)
    return ((top24 / float(1 << 24) - 0.5) / 64.0).astype(np.float32)
