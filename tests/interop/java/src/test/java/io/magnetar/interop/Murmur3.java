package io.magnetar.interop;

import java.nio.charset.StandardCharsets;

/** Murmur3 x86 32-bit hash (seed 0) of a string's UTF-8 bytes, masked to a non-negative int, as Pulsar uses. */
final class Murmur3 {
    private Murmur3() {}

    /** Pulsar's Murmur3_32Hash.makeHash: murmur3_32(utf8(key)) &amp; Integer.MAX_VALUE. */
    static int hash32(String key) {
        byte[] data = key.getBytes(StandardCharsets.UTF_8);
        int h = 0;
        int blocks = data.length / 4;
        for (int i = 0; i < blocks; i++) {
            int k = (data[4 * i] & 0xff) | (data[4 * i + 1] & 0xff) << 8 | (data[4 * i + 2] & 0xff) << 16
                    | (data[4 * i + 3] & 0xff) << 24;
            h ^= mix(k);
            h = Integer.rotateLeft(h, 13) * 5 + 0xe6546b64;
        }
        int k = 0;
        int tail = blocks * 4;
        switch (data.length & 3) {
            case 3:
                k ^= (data[tail + 2] & 0xff) << 16;
                // fall through
            case 2:
                k ^= (data[tail + 1] & 0xff) << 8;
                // fall through
            case 1:
                k ^= data[tail] & 0xff;
                h ^= mix(k);
                break;
            default:
                break;
        }
        h ^= data.length;
        h ^= h >>> 16;
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        h *= 0xc2b2ae35;
        h ^= h >>> 16;
        return h & Integer.MAX_VALUE;
    }

    private static int mix(int k) {
        k *= 0xcc9e2d51;
        k = Integer.rotateLeft(k, 15);
        return k * 0x1b873593;
    }
}
