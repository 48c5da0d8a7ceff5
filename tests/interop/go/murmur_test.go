package interop

import "math/bits"

// murmur3 is Murmur3 x86 32-bit (seed 0) of the UTF-8 bytes of key, masked to a non-negative int,
// as Pulsar's Murmur3_32Hash computes it.
func murmur3(key string) uint32 {
	data := []byte(key)
	var h uint32
	mix := func(k uint32) uint32 {
		k *= 0xcc9e2d51
		k = bits.RotateLeft32(k, 15)
		return k * 0x1b873593
	}
	n := len(data) / 4
	for i := 0; i < n; i++ {
		k := uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24
		h ^= mix(k)
		h = bits.RotateLeft32(h, 13)*5 + 0xe6546b64
	}
	tail := data[4*n:]
	var k uint32
	switch len(tail) {
	case 3:
		k ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(tail[0])
		h ^= mix(k)
	}
	h ^= uint32(len(data))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h & 0x7fffffff
}

// goJavaStringHash is what the Go client's JavaStringHash scheme computes: 31*h+b over the UTF-8 bytes
// in uint32, without Java's sign mask. It equals Java's String.hashCode() & Integer.MAX_VALUE only for
// ASCII keys whose Java hash is non-negative, so Go and Java producers can route the same key to
// different partitions (a difference of the Go client, not of the broker).
func goJavaStringHash(key string) uint32 {
	var h uint32
	for i := 0; i < len(key); i++ {
		h = 31*h + uint32(key[i])
	}
	return h
}
