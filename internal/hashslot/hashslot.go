// Package hashslot maps keys to Redis Cluster's 16384 hash slots: the
// CRC16 (XMODEM) of the key, or of its hash tag, modulo 16384.
package hashslot

// Count is the number of hash slots.
const Count = 16384

// Of returns key's hash slot. When key holds a hash tag, a "{" followed
// later by a "}" with at least one byte between them, only the bytes
// between the first "{" and the first "}" after it are hashed, so that
// keys with the same tag share a slot.
func Of(key []byte) int {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return int(crc16(key)) & (Count - 1)
			}
		}
		break
	}
	return int(crc16(key)) & (Count - 1)
}

// crc16 is CRC-16/XMODEM: polynomial 0x1021, initial value 0, no
// reflection, as Redis computes it.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
